// Element types, dim collapsing and the printed form of the kernel program.
#include "Program.h"
#include "Lowering.h"
#include "otc/kernels/extents.h"

#include <algorithm>
#include <map>
#include <sstream>

namespace otc {

const char *typeName(ElemType t) {
  switch (t) {
  case ElemType::F32: return "f32";
  case ElemType::F16: return "f16";
  case ElemType::BF16: return "bf16";
  case ElemType::I64: return "i64";
  case ElemType::I1: return "i1";
  }
  return "?";
}

int64_t byteSize(ElemType t) {
  switch (t) {
  case ElemType::F32: return 4;
  case ElemType::F16:
  case ElemType::BF16: return 2;
  case ElemType::I64: return 8;
  case ElemType::I1: return 1;
  }
  return 0;
}

bool isFloat(ElemType t) {
  return t == ElemType::F32 || t == ElemType::F16 || t == ElemType::BF16;
}

std::string scalarText(const LibraryCall::Scalar &s) {
  switch (s.kind) {
  case LibraryCall::Scalar::First: return "first";
  case LibraryCall::Scalar::Int: return intLiteral(s.value);
  case LibraryCall::Scalar::Float: return floatLiteral(s.real);
  }
  return "?";
}

const char *kernelTemplate(LibraryCall::Kernel k) {
  switch (k) {
#define OTC_KERNEL_NAME(Kind, name, blas, extents)                                 \
  case LibraryCall::Kernel::Kind:                                              \
    return name;
    OTC_LIBRARY_KERNELS(OTC_KERNEL_NAME)
#undef OTC_KERNEL_NAME
  }
  return "?";
}

bool kernelUsesBlas(LibraryCall::Kernel k) {
  switch (k) {
#define OTC_KERNEL_BLAS(Kind, name, blas, extents)                                 \
  case LibraryCall::Kernel::Kind:                                              \
    return blas;
    OTC_LIBRARY_KERNELS(OTC_KERNEL_BLAS)
#undef OTC_KERNEL_BLAS
  }
  return false;
}

std::vector<int64_t> kernelExtents(const LibraryCall &call) {
  std::vector<long long> k(call.constants.begin(), call.constants.end());
  int constants = (int)k.size(), pointers = (int)call.buffers.size();
  otc_kernels::Extents e;
  switch (call.kernel) {
#define OTC_KERNEL_EXTENTS(Kind, name, blas, extents)                          \
  case LibraryCall::Kernel::Kind:                                              \
    e = otc_kernels::extents(k.data(), constants, pointers);                   \
    break;
    OTC_LIBRARY_KERNELS(OTC_KERNEL_EXTENTS)
#undef OTC_KERNEL_EXTENTS
  }
  if (e.count != pointers)
    return {};
  return std::vector<int64_t>(e.elements, e.elements + e.count);
}

int64_t leadingDim(const Gemm &g, char operand) {
  if (operand == 'a')
    return g.lda ? g.lda : g.transA ? g.m : g.k;
  if (operand == 'b')
    return g.ldb ? g.ldb : g.transB ? g.k : g.n;
  return g.ldc ? g.ldc : g.n;
}

int64_t Buffer::count() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  if (pitch && !shape.empty() && shape.back())
    n = n / shape.back() * pitch;
  return n;
}

void collapseDims(Step &step) {
  auto mergeable = [&](size_t d) {
    if (step.reduced[d] != step.reduced[d + 1])
      return false;
    auto contiguous = [&](const std::vector<int64_t> &s) {
      return s[d] == s[d + 1] * step.shape[d + 1];
    };
    for (const Node &n : step.nodes)
      if (((n.op == Node::Load || n.op == Node::Gather || n.op == Node::Uniform) &&
           !contiguous(n.strides)) ||
          (n.op == Node::Coord && (n.ivalue == (int64_t)d || n.ivalue == (int64_t)d + 1)))
        return false;
    for (const Store &s : step.stores)
      if (!contiguous(s.strides))
        return false;
    return true;
  };
  auto merge = [&](size_t d) {
    step.shape[d] *= step.shape[d + 1];
    step.shape.erase(step.shape.begin() + d + 1);
    step.reduced.erase(step.reduced.begin() + d + 1);
    auto fix = [&](std::vector<int64_t> &s) {
      s[d] = s[d + 1];
      s.erase(s.begin() + d + 1);
    };
    for (Node &n : step.nodes) {
      if (n.op == Node::Load || n.op == Node::Gather || n.op == Node::Uniform)
        fix(n.strides);
      if (n.op == Node::Coord && n.ivalue > (int64_t)d + 1)
        --n.ivalue;
    }
    for (Store &s : step.stores)
      fix(s.strides);
  };
  for (size_t d = 0; d + 1 < step.shape.size();) {
    if (mergeable(d))
      merge(d);
    else
      ++d;
  }
}

namespace {

std::string dims(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

const char *placeName(Buffer::Place p) {
  switch (p) {
  case Buffer::Place::Arena: return "arena";
  case Buffer::Place::Input: return "input";
  case Buffer::Place::Param: return "param";
  case Buffer::Place::Grad: return "grad";
  case Buffer::Place::Loss: return "loss";
  case Buffer::Place::Argument: return "argument";
  case Buffer::Place::Result: return "result";
  case Buffer::Place::Constant: return "constant";
  case Buffer::Place::LowParam: return "low_param";
  }
  return "?";
}

const char *opName(Node::Op op) {
  static const char *names[] = {
#define OTC_NODE(Kind, name) name,
#include "Nodes.def"
  };
  return names[op];
}


void printNodes(std::ostream &os, const Step &s) {
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    const Node &n = s.nodes[i];
    os << "    n" << i << " = " << opName(n.op);
    if (n.op == Node::Load || n.op == Node::Gather)
      os << " b" << n.buffer << dims(n.strides) << (n.offset ? "+" + std::to_string(n.offset) : "");
    if (n.op == Node::Gather)
      os << " +" << n.ivalue << "*wrap(n" << n.args[0] << ", " << n.extent << ")";
    else if (n.op == Node::Const)
      os << " " << (n.type == ElemType::F32 ? std::to_string(n.value)
                                             : std::to_string(n.ivalue));
    else if (n.op == Node::Coord || n.op == Node::Reduced)
      os << " " << n.ivalue;
    else if (n.op == Node::Uniform)
      os << " stream " << n.ivalue << dims(n.strides);
    for (int a : n.args)
      os << " n" << a;
    os << " : " << typeName(n.type) << "\n";
  }
  for (size_t k = 0; k < s.reductions.size(); ++k)
    os << "    r" << k << " = " << (s.reductions[k].kind == Reduction::Sum ? "sum" : "max")
       << " n" << s.reductions[k].node << "\n";
  for (const Store &st : s.stores)
    os << "    store b" << st.buffer << dims(st.strides)
       << (st.offset ? "+" + std::to_string(st.offset) : "") << " n" << st.node << "\n";
}

} // namespace

std::string printProgram(const Program &p) {
  std::ostringstream os;
  os << "program: " << p.buffers.size() << " buffers, " << p.steps.size()
     << " steps, arena " << p.arenaBytes << " bytes";
  if (p.microBatch)
    os << ", micro-batch " << p.microBatch;
  os << "\nbuffers:\n";
  for (const Buffer &b : p.buffers) {
    os << "  b" << b.id << " " << typeName(b.type) << dims(b.shape) << " "
       << placeName(b.place);
    if (b.pitch)
      os << " pitch=" << b.pitch;
    if (b.place == Buffer::Place::Arena)
      os << " @" << b.offset;
    else if (b.place != Buffer::Place::Loss)
      os << " " << b.binding;
    if (!b.name.empty())
      os << " \"" << b.name << "\"";
    os << "\n";
  }
  os << "steps:\n";
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step &s = p.steps[i];
    os << "  s" << i << " " << kindName(s.kind) << " (" << s.origin << ")";
    if (s.kind == Step::Gemm) {
      const Gemm &g = s.gemm;
      static const char *betas[] = {"0", "1", "first?0:1"};
      os << " b" << g.a << (g.transA ? "^T" : "") << " * b" << g.b
         << (g.transB ? "^T" : "") << " -> b" << g.c << " m=" << g.m << " n=" << g.n
         << " k=" << g.k << " batch=" << g.batch << " alpha=" << g.alpha
         << " beta=" << betas[int(g.beta)] << " "
         << typeName(p.buffers[g.a].type) << "*" << typeName(p.buffers[g.b].type)
         << "->" << typeName(p.buffers[g.c].type) << " acc=f32";
      for (auto [name, ld] : {std::pair{" lda=", g.lda}, {" ldb=", g.ldb}, {" ldc=", g.ldc}})
        if (ld)
          os << name << ld;
      if (g.bias >= 0)
        os << " bias=b" << g.bias;
      if (g.gelu || g.dgelu)
        os << (g.gelu ? " gelu" : " dgelu") << " preactivation=b" << g.aux;
      if (g.biasGrad >= 0)
        os << " bias_grad(" << (g.biasGradOf == Gemm::BiasGradOf::A ? "a" : "b") << ")->b"
           << g.biasGrad;
      os << "\n";
      continue;
    }
    if (s.kind == Step::LibraryCall) {
      os << " " << kernelTemplate(s.call.kernel) << dims(s.call.constants);
      for (size_t i = 0; i < s.call.buffers.size(); ++i) {
        os << " b" << s.call.buffers[i];
        if (!s.call.offsets.empty() && s.call.offsets[i])
          os << "+" << s.call.offsets[i];
      }
      for (const LibraryCall::Scalar &a : s.call.scalars)
        os << " " << scalarText(a);
      os << "\n";
      continue;
    }
    os << " ";
    os << "[";
    for (size_t d = 0; d < s.shape.size(); ++d)
      os << (d ? "," : "") << s.shape[d] << (s.reduced[d] ? "r" : "");
    os << "]\n";
    printNodes(os, s);
  }
  return os.str();
}

} // namespace otc

namespace otc {

/// The buffers step `s` reads or writes.
std::vector<int> stepBuffers(const Step &s) {
  std::vector<int> ids;
  for (const Node &n : s.nodes)
    if (n.buffer >= 0)
      ids.push_back(n.buffer);
  for (const Store &st : s.stores)
    ids.push_back(st.buffer);
  if (s.kind == Step::Gemm)
    ids.insert(ids.end(), {s.gemm.a, s.gemm.b, s.gemm.c});
  if (s.kind == Step::Gemm && s.gemm.bias >= 0)
    ids.push_back(s.gemm.bias);
  if (s.kind == Step::Gemm && s.gemm.aux >= 0)
    ids.push_back(s.gemm.aux);
  if (s.kind == Step::Gemm && s.gemm.biasGrad >= 0)
    ids.push_back(s.gemm.biasGrad);
  if (s.kind == Step::LibraryCall)
    ids.insert(ids.end(), s.call.buffers.begin(), s.call.buffers.end());
  return ids;
}

std::vector<int> stepWrites(const Step &s) {
  std::vector<int> ids;
  for (const Store &st : s.stores)
    ids.push_back(st.buffer);
  if (s.kind == Step::Gemm) {
    ids.push_back(s.gemm.c);
    if (s.gemm.gelu)
      ids.push_back(s.gemm.aux);
    if (s.gemm.biasGrad >= 0)
      ids.push_back(s.gemm.biasGrad);
  }
  if (s.kind == Step::LibraryCall)
    ids.insert(ids.end(), s.call.buffers.end() - s.call.outputs, s.call.buffers.end());
  return ids;
}

const char *kindName(Step::Kind k) {
  static const char *names[] = {"elementwise", "reduce", "row_reduce", "gemm",
                                "library_call"};
  return names[k];
}

namespace {

/// Elements of `buffer` an access touches: the iteration points along the
/// dims its strides walk, at most the buffer.
int64_t touched(const Program &p, const Step &s, int buffer, const std::vector<int64_t> &strides) {
  int64_t n = 1;
  for (size_t d = 0; d < strides.size() && d < s.shape.size(); ++d)
    if (strides[d] != 0)
      n *= s.shape[d];
  return std::min(n, p.buffers[size_t(buffer)].count());
}

} // namespace

int64_t stepBytes(const Program &p, const Step &s) {
  // Elements per buffer, read and written apart; each at most the buffer.
  std::map<int, int64_t> reads, writes;
  auto add = [&](std::map<int, int64_t> &to, int id, int64_t n) {
    if (id >= 0)
      to[id] = std::min(to[id] + n, p.buffers[size_t(id)].count());
  };
  int64_t points = 1;
  for (int64_t d : s.shape)
    points *= d;
  for (const Node &n : s.nodes)
    if (n.op == Node::Load)
      add(reads, n.buffer, touched(p, s, n.buffer, n.strides));
    else if (n.op == Node::Gather)
      add(reads, n.buffer, points);
  for (const Store &st : s.stores)
    add(writes, st.buffer, touched(p, s, st.buffer, st.strides));
  if (s.kind == Step::Gemm) {
    const Gemm &g = s.gemm;
    add(reads, g.a, g.m * g.k * (g.strideA ? g.batch : 1));
    add(reads, g.b, g.k * g.n * (g.strideB ? g.batch : 1));
    add(writes, g.c, g.m * g.n * g.batch);
    if (g.beta != Gemm::Beta::Zero)
      add(reads, g.c, g.m * g.n * g.batch);
    add(reads, g.bias, g.n);
    if (g.aux >= 0)
      add(g.dgelu ? reads : writes, g.aux, g.m * g.n);
    add(writes, g.biasGrad, g.biasGradOf == Gemm::BiasGradOf::A ? g.m : g.n);
  }
  if (s.kind == Step::LibraryCall) // whole buffers: a view's extent is the kernel's
    for (size_t i = 0; i < s.call.buffers.size(); ++i) {
      int id = s.call.buffers[i];
      std::map<int, int64_t> &to = int(i) >= int(s.call.buffers.size()) - s.call.outputs ? writes : reads;
      if (id >= 0)
        to[id] = p.buffers[size_t(id)].count();
    }
  int64_t bytes = 0;
  for (auto *m : {&reads, &writes})
    for (auto [id, n] : *m)
      bytes += n * byteSize(p.buffers[size_t(id)].type);
  return bytes;
}

int64_t stepFlops(const Step &s) {
  if (s.kind == Step::Gemm) {
    const Gemm &g = s.gemm;
    int64_t mn = g.m * g.n * g.batch;
    return 2 * g.k * mn + (g.beta != Gemm::Beta::Zero || g.bias >= 0 ? mn : 0) +
           (g.biasGrad >= 0 ? g.k * (g.biasGradOf == Gemm::BiasGradOf::A ? g.m : g.n) : 0);
  }
  if (s.kind == Step::LibraryCall)
    return s.flops;
  int64_t points = 1;
  for (int64_t d : s.shape)
    points *= d;
  int64_t perPoint = int64_t(s.reductions.size());
  for (const Node &n : s.nodes)
    switch (n.op) {
    case Node::Load: case Node::Const: case Node::Seed: case Node::First: case Node::Coord:
    case Node::Reduced: case Node::Gather:
      break;
    default:
      perPoint += n.type == ElemType::F32 ? 1 : 0;
    }
  return perPoint * points;
}

PersistentBytes persistentBytes(const Program &program, otc_optimizer optimizer) {
  auto bytesOf = [](const TensorDesc &d, ElemType type) {
    int64_t n = byteSize(type);
    for (int64_t s : d.shape)
      n *= s;
    return n;
  };
  PersistentBytes p;
  for (size_t i = 0; i < program.params.size(); ++i) {
    const TensorDesc &d = program.params[i];
    if (!d.lowOnly)
      p.params += bytesOf(d, d.type);
    if (d.lowType != ElemType::F32)
      p.lowCopies += bytesOf(d, d.lowType);
    if (program.gradIndex[i] >= 0) {
      p.grads += bytesOf(d, d.type);
      p.optimizerState += optimizerStateBytes(optimizer, d.shape.data(), int(d.shape.size()),
                                              program.min8bitSize);
    }
  }
  for (const TensorDesc &d : program.inputs)
    p.inputs += program.inputSlots * bytesOf(d, d.type);
  for (const Buffer &b : program.buffers)
    if (b.place == Buffer::Place::Constant)
      p.constants += b.bytes();
  p.workspace = program.workspaceBytes;
  return p;
}

std::string memoryReport(const Program &program, otc_optimizer optimizer) {
  PersistentBytes p = persistentBytes(program, optimizer);
  // Copies the optimizer update writes persist beside the parameters; cast
  // kernels' copies (of transposed or sliced parameters) live in the arena,
  // at most lowCopyBytes at once. The rest of the arena's planned size is
  // activations, temporaries and alignment.
  int64_t arenaCopies = std::min(program.lowCopyBytes, program.arenaBytes);
  struct Row {
    const char *what;
    int64_t bytes;
  } rows[] = {
      {"parameters (float32)", p.params},
      {"low-precision weight copies", p.lowCopies + arenaCopies},
      {"gradient buffers (float32)", p.grads},
      {optimizer == OTC_ADAMW8BIT ? "optimizer state (8-bit)" : "optimizer state (float32)",
       p.optimizerState},
      {"activations and temporaries", program.arenaBytes - arenaCopies},
      {program.inputSlots == 2 ? "data inputs (two micro-batches)"
                               : "data inputs (one micro-batch)",
       p.inputs},
      {"constants", p.constants},
      {"library workspace (cuBLAS)", p.workspace},
  };
  std::ostringstream os;
  os << "memory plan (bytes):\n";
  int64_t total = 0;
  for (const Row &r : rows) {
    os << "  " << r.what << std::string(32 - std::string(r.what).size(), ' ') << r.bytes << "\n";
    total += r.bytes;
  }
  os << "  total" << std::string(27, ' ') << total << "\n";
  if (!program.lora.empty()) {
    // The adapters against the base: what LoRA trains and what it freezes.
    int64_t adapters = 0, base = 0, low = 0;
    for (size_t i = 0; i < program.params.size(); ++i) {
      const TensorDesc &d = program.params[i];
      int64_t n = d.lowOnly ? byteSize(d.lowType) : 4;
      for (int64_t e : d.shape)
        n *= e;
      (d.init != OTC_INIT_MODEL ? adapters : base) += n;
      low += d.lowOnly ? n : 0;
    }
    os << "  LoRA: " << program.lora.size() << " adapters, " << adapters
       << " bytes trained; base " << base << " bytes frozen (no gradients, no optimizer state";
    if (low)
      os << "; " << low << " of them stored only in 16 bits";
    os << ")\n";
  }
  return os.str();
}

} // namespace otc
