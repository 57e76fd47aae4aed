#include "EmitCommon.h"
#include "Targets.h"
#include "../Lowering.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

namespace otc {

const char *storageType(ElemType t) {
  switch (t) {
  case ElemType::F32: return "float";
  case ElemType::F16: return "otc_f16";
  case ElemType::BF16: return "otc_bf16";
  case ElemType::I64: return "long long";
  case ElemType::I1: return "bool";
  }
  return "?";
}

const char *valueType(ElemType t) {
  return t == ElemType::I64 ? "long long" : t == ElemType::I1 ? "bool" : "float";
}

std::string var(int node) { return "v" + std::to_string(node); }
namespace {
/// While a kernel is printed: its buffer parameters, named by position.
const std::vector<int> *kernelParamBuffers = nullptr;
} // namespace

KernelParamNames::KernelParamNames(const std::vector<int> &buffers) {
  kernelParamBuffers = &buffers;
}
KernelParamNames::~KernelParamNames() { kernelParamBuffers = nullptr; }

std::string bufferName(int id) {
  if (kernelParamBuffers)
    for (size_t i = 0; i < kernelParamBuffers->size(); ++i)
      if ((*kernelParamBuffers)[i] == id)
        return "p" + std::to_string(i);
  return "b" + std::to_string(id);
}

std::string kernelName(const Step &s, int k) {
  std::string op = s.origin.rfind("otc.", 0) == 0 ? s.origin.substr(4) : s.origin;
  std::string name = "k" + std::to_string(k) + "_";
  for (char c : op)
    name += std::isalnum((unsigned char)c) ? c : '_';
  return s.recomputed ? name + "_recomputed" : name;
}

LoopInfo::LoopInfo(const Step &s) : step(s) {
  for (size_t d = 0; d < s.shape.size(); ++d) {
    (s.reduced[d] ? reducedDims : kept).push_back((int)d);
    (s.reduced[d] ? cols : rows) *= s.shape[d];
  }
  size_t n = s.nodes.size();
  inner.assign(n, false);
  phase.assign(n, 0);
  pass.assign(s.reductions.size(), 0);
  // Nodes come after their operands, and a reduction's body before its
  // Reduced node, so one forward sweep settles everything.
  std::set<int> bufs;
  for (size_t i = 0; i < n; ++i) {
    const Node &node = s.nodes[i];
    if (node.op == Node::Load || node.op == Node::Gather) {
      bufs.insert(node.buffer);
      for (int d : reducedDims)
        inner[i] = inner[i] || node.strides[d] != 0;
    }
    if (node.op == Node::Coord)
      inner[i] = s.reduced[node.ivalue];
    if (node.op == Node::Seed)
      usesSeed = true;
    if (node.op == Node::First)
      usesFirst = true;
    if (node.op == Node::Uniform) {
      usesRng = true;
      for (int d : reducedDims)
        inner[i] = inner[i] || node.strides[d] != 0;
    }
    for (int a : node.args) {
      inner[i] = inner[i] || inner[a];
      phase[i] = std::max(phase[i], phase[a]);
    }
    if (node.op == Node::Reduced) {
      int k = (int)node.ivalue;
      pass[k] = phase[s.reductions[k].node];
      phase[i] = pass[k] + 1;
      passes = std::max(passes, pass[k] + 1);
    }
  }
  for (const Store &st : s.stores) {
    bufs.insert(st.buffer);
    bool varies = inner[st.node];
    for (int d : reducedDims)
      varies = varies || st.strides[d] != 0;
    innerStore.push_back(varies);
  }
  buffers.assign(bufs.begin(), bufs.end());
}

std::vector<int> LoopInfo::storeRoots(bool innerStores) const {
  std::vector<int> roots;
  for (size_t i = 0; i < step.stores.size(); ++i)
    if (innerStore[i] == innerStores)
      roots.push_back(step.stores[i].node);
  return roots;
}

std::vector<int> LoopInfo::allRoots() const {
  std::vector<int> roots;
  for (const Store &st : step.stores)
    roots.push_back(st.node);
  for (const Reduction &r : step.reductions)
    roots.push_back(r.node);
  return roots;
}

void NodePrinter::emit(std::ostream &os, const std::vector<int> &roots,
                       std::vector<char> &defined, const std::string &pad,
                       const std::function<bool(int)> &want) const {
  // Operands have smaller indices: one backward sweep marks what is needed,
  // one forward sweep prints it. No recursion, whatever the depth.
  std::vector<char> needed(step.nodes.size(), 0);
  for (int r : roots)
    needed[r] = 1;
  for (int i = (int)step.nodes.size() - 1; i >= 0; --i) {
    if (!needed[i] || defined[i])
      continue;
    for (int a : step.nodes[i].args)
      needed[a] = 1;
  }
  for (size_t i = 0; i < step.nodes.size(); ++i) {
    if (!needed[i] || defined[i] || (want && !want((int)i)))
      continue;
    defined[i] = 1;
    os << pad << "const " << valueType(step.nodes[i].type) << " " << var(i) << " = "
       << expr(i) << ";\n";
  }
}

std::string NodePrinter::index(const std::vector<int64_t> &strides, int64_t offset) const {
  std::string s = offset ? std::to_string(offset) : "";
  for (size_t d = 0; d < strides.size(); ++d) {
    if (!strides[d])
      continue;
    s += (s.empty() ? "" : " + ") + std::string("c") + std::to_string(d);
    if (strides[d] != 1)
      s += " * " + std::to_string(strides[d]);
  }
  return s.empty() ? "0" : s;
}

/// A row's C expression with %0, %1, %2 replaced by the operands' locals.
static std::string substitute(const char *expr, const Node &n) {
  std::string out;
  for (const char *c = expr; *c; ++c) {
    if (c[0] == '%' && c[1] >= '0' && c[1] <= '2') {
      out += var(n.args[*++c - '0']);
      continue;
    }
    out += *c;
  }
  return out;
}

std::string NodePrinter::expr(int i) const {
  const Node &n = step.nodes[i];
  auto a = [&](int k) { return var(n.args[k]); };
  bool f = n.type == ElemType::F32;
  switch (n.op) {
  case Node::Load: {
    if (loadOverride) {
      std::string lane = loadOverride(i);
      if (!lane.empty())
        return lane;
    }
    std::string ref = bufferName(n.buffer) + "[" + index(n.strides, n.offset) + "]";
    ElemType t = program.buffers[n.buffer].type;
    return t == ElemType::F16 || t == ElemType::BF16 ? "otc_ld(" + ref + ")" : ref;
  }
  case Node::Const:
    if (f)
      return floatLiteral(n.value);
    return n.type == ElemType::I1 ? (n.ivalue ? "true" : "false") : intLiteral(n.ivalue);
  case Node::Seed: return "seed";
  case Node::First: return "(first != 0)";
  case Node::Coord: return "(long long)c" + std::to_string(n.ivalue);
  case Node::Reduced: return reducedName((int)n.ivalue);
  case Node::Max:
    return f ? "fmaxf(" + a(0) + ", " + a(1) + ")"
             : "(" + a(0) + " > " + a(1) + " ? " + a(0) + " : " + a(1) + ")";
  case Node::Gather: {
    std::string k = "otc_wrap_index(" + a(0) + ", " + intLiteral(n.extent) + ")";
    std::string ref = bufferName(n.buffer) + "[" + index(n.strides, n.offset) + " + " + k + " * " +
                      intLiteral(n.ivalue) + "]";
    ElemType t = program.buffers[n.buffer].type;
    if (t == ElemType::F16 || t == ElemType::BF16)
      ref = "otc_ld(" + ref + ")";
    return "(" + k + " < 0 ? " + (f ? "0.0f" : "0LL") + " : " + ref + ")";
  }
  case Node::Pow: // small integer exponents as products: exact and fast
    if (n.value == 2.0)
      return a(0) + " * " + a(0);
    if (n.value == 1.0)
      return a(0);
    if (n.value == 0.0)
      return "1.0f";
    return "powf(" + a(0) + ", " + floatLiteral(n.value) + ")";
  case Node::Uniform:
    return "otc_uniform(rng_seed, rng_offset, " + std::to_string(uint32_t(n.ivalue)) +
           "u, (unsigned long long)(" + index(n.strides) + "))";
#define OTC_EXPR_NODE(Kind, name, expr) \
  case Node::Kind: return substitute(expr, n);
#include "../Nodes.def"
  }
  return "0";
}

std::string NodePrinter::store(const Store &s) const {
  std::string ref = bufferName(s.buffer) + "[" + index(s.strides, s.offset) + "]";
  ElemType t = program.buffers[s.buffer].type;
  if (t == ElemType::F16 || t == ElemType::BF16)
    return "otc_store(&" + ref + ", " + var(s.node) + ");";
  return ref + " = " + var(s.node) + ";";
}

std::string coords(const Step &s, const std::vector<int> &dims, const std::string &flat,
                   const std::string &indexType, const std::string &pad) {
  std::string out;
  int64_t stride = 1;
  for (int k = (int)dims.size() - 1; k >= 0; --k) {
    std::string c = flat;
    if (stride != 1)
      c = "(" + c + " / " + std::to_string(stride) + ")";
    if (k != 0)
      c = c + " % " + std::to_string(s.shape[dims[k]]);
    // Not every expression reads every coordinate.
    out = pad + "[[maybe_unused]] const " + indexType + " c" + std::to_string(dims[k]) + " = " + c + ";\n" + out;
    stride *= s.shape[dims[k]];
  }
  return out;
}

std::string kernelParams(const Program &p, const LoopInfo &info, bool scalarsInMemory) {
  std::string s;
  for (int b : info.buffers)
    s += (s.empty() ? "" : ", ") + std::string(storageType(p.buffers[b].type)) +
         " *__restrict__ " + bufferName(b);
  if (info.usesSeed && !scalarsInMemory)
    s += (s.empty() ? "" : ", ") + std::string("float seed");
  if (info.usesFirst)
    s += (s.empty() ? "" : ", ") + std::string("int first");
  if (info.usesRng && !scalarsInMemory)
    s += (s.empty() ? "" : ", ") +
         std::string("unsigned long long rng_seed, unsigned long long rng_offset");
  return s;
}

std::string kernelArgs(const LoopInfo &info, bool scalarsInMemory) {
  std::string s;
  for (int b : info.buffers)
    s += (s.empty() ? "" : ", ") + bufferName(b);
  if (info.usesSeed && !scalarsInMemory)
    s += (s.empty() ? "" : ", ") + std::string("seed");
  if (info.usesFirst)
    s += (s.empty() ? "" : ", ") + std::string("first");
  if (info.usesRng && !scalarsInMemory)
    s += (s.empty() ? "" : ", ") + std::string("rng_seed, rng_offset");
  return s;
}

std::string leadingDimArgs(const Gemm &g) {
  if (!g.lda && !g.ldb && !g.ldc)
    return "";
  return ", " + std::to_string(g.lda) + "LL, " + std::to_string(g.ldb) + "LL, " +
         std::to_string(g.ldc) + "LL";
}

void emitLibraryCall(std::ostream &os, const LibraryCall &call, bool cuda) {
  os << "  otc_kernels::" << kernelTemplate(call.kernel);
  if (!call.constants.empty()) {
    os << "<";
    for (size_t i = 0; i < call.constants.size(); ++i)
      os << (i ? ", " : "") << intLiteral(call.constants[i]);
    os << ">";
  }
  os << "(";
  std::vector<std::string> args;
  for (size_t i = 0; i < call.buffers.size(); ++i)
    args.push_back(bufferName(call.buffers[i]) +
                   (call.offsets.empty() || !call.offsets[i] ? ""
                                                             : " + " + intLiteral(call.offsets[i])));
  for (const LibraryCall::Scalar &s : call.scalars)
    args.push_back(scalarText(s));
  if (cuda && kernelUsesBlas(call.kernel))
    args.push_back("handle");
  if (cuda)
    args.push_back("stream");
  for (size_t i = 0; i < args.size(); ++i)
    os << (i ? ", " : "") << args[i];
  os << ");\n";
}

void emitRowPass(std::ostream &os, const NodePrinter &np, const LoopInfo &info, int pass,
                 std::vector<char> &defined, const std::string &colLoop,
                 const std::string &colEnd, const RowTail *tail) {
  const Step &s = info.step;
  np.emit(os, info.allRoots(), defined, "    ", info.outerAfter(pass));
  std::vector<int> bodies;
  for (size_t k = 0; k < s.reductions.size(); ++k)
    if (info.pass[k] == pass) {
      os << "    float a" << k << " = " << reductionInit(s.reductions[k].kind) << ";\n";
      bodies.push_back(s.reductions[k].node);
    }
  auto loop = [&](const NodePrinter &printer, const std::string &open, const std::string &end) {
    os << open;
    std::vector<char> scope = defined;
    printer.emit(os, bodies, scope, "      ");
    for (size_t k = 0; k < s.reductions.size(); ++k)
      if (info.pass[k] == pass)
        os << "      "
           << reductionUpdate(s.reductions[k].kind, "a" + std::to_string(k),
                              var(s.reductions[k].node))
           << "\n";
    os << end;
  };
  loop(np, colLoop, colEnd);
  if (tail)
    loop(tail->np, tail->open, tail->close);
}

void emitInnerStores(std::ostream &os, const NodePrinter &np, const LoopInfo &info,
                     std::vector<char> &defined, const std::string &colLoop) {
  const Step &s = info.step;
  std::vector<int> innerRoots = info.storeRoots(true);
  if (innerRoots.empty())
    return;
  np.emit(os, innerRoots, defined, "    ", info.outerAfter(info.passes));
  os << colLoop;
  std::vector<char> scope = defined;
  np.emit(os, innerRoots, scope, "      ");
  for (size_t i = 0; i < s.stores.size(); ++i)
    if (info.innerStore[i])
      os << "      " << np.store(s.stores[i]) << "\n";
  os << "    }\n";
}

const char *reductionInit(Reduction::Kind k) {
  return k == Reduction::Sum ? "0.0f" : "-INFINITY";
}

std::string reductionUpdate(Reduction::Kind k, const std::string &acc, const std::string &v) {
  if (k == Reduction::Sum)
    return acc + " += " + v + ";";
  return acc + " = fmaxf(" + acc + ", " + v + ");";
}

} // namespace otc
