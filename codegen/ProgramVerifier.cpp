// The kernel program's verifier (ProgramVerifier.h), run on every compile
// after lowering.
#include "ProgramVerifier.h"

#include <algorithm>
#include <map>
#include <sstream>

namespace otc {
namespace {

/// The arithmetic type a buffer's elements load as and store from.
ElemType valueTypeOf(ElemType storage) { return isFloat(storage) ? ElemType::F32 : storage; }

bool persistent(const Buffer &b) {
  return b.place != Buffer::Place::Arena && b.place != Buffer::Place::Result;
}

class Verifier {
public:
  explicit Verifier(const Program &p) : p(p), written(p.buffers.size(), 0) {
    for (const Buffer &b : p.buffers)
      written[b.id] = persistent(b);
  }

  std::string run() {
    for (size_t i = 0; i < p.buffers.size() && error.empty(); ++i)
      if (p.buffers[i].id != (int)i)
        fail(-1, (int)i, "has id " + std::to_string(p.buffers[i].id));
    for (size_t s = 0; s < p.steps.size() && error.empty(); ++s)
      step((int)s);
    if (error.empty())
      arenaOverlaps();
    return error;
  }

private:
  void fail(int step, int buffer, const std::string &what) {
    if (!error.empty())
      return;
    std::ostringstream os;
    os << "kernel program: ";
    if (step >= 0)
      os << "step " << step << " (" << p.steps[step].origin << "): ";
    if (buffer >= 0 && buffer < (int)p.buffers.size())
      os << "buffer b" << buffer << " '" << p.buffers[buffer].name << "' ";
    else if (buffer >= 0)
      os << "buffer b" << buffer << " ";
    os << what;
    error = os.str();
  }

  bool known(int s, int b) {
    if (b >= 0 && b < (int)p.buffers.size())
      return true;
    fail(s, b, "does not exist");
    return false;
  }

  void read(int s, int b) {
    if (!known(s, b))
      return;
    touch(s, b);
    if (!written[b])
      fail(s, b, "is read before any step writes it");
  }

  void write(int s, int b) {
    if (!known(s, b))
      return;
    touch(s, b);
    pendingWrites.push_back(b);
  }

  void touch(int s, int b) {
    auto [it, fresh] = live.try_emplace(b, std::make_pair(s, s));
    if (!fresh)
      it->second.second = s;
  }

  /// Elements `offset + sum (shape[d] - 1) * strides[d]` and the lowest one
  /// must lie inside buffer `b`; `extra` is added to the highest (a gather).
  void inBounds(int s, int b, const std::vector<int64_t> &shape,
                const std::vector<int64_t> &strides, int64_t offset, int64_t extra = 0) {
    if (strides.size() != shape.size())
      return fail(s, b, "is accessed with " + std::to_string(strides.size()) +
                            " strides in a " + std::to_string(shape.size()) + "-d step");
    int64_t lo = offset, hi = offset + extra;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == 0)
        return;
      (strides[d] < 0 ? lo : hi) += (shape[d] - 1) * strides[d];
    }
    if (lo < 0 || hi >= p.buffers[b].count())
      fail(s, b, "is accessed at elements [" + std::to_string(lo) + ", " + std::to_string(hi) +
                     "], outside its " + std::to_string(p.buffers[b].count()));
  }

  void nodes(int s) {
    const Step &st = p.steps[s];
    for (size_t i = 0; i < st.nodes.size() && error.empty(); ++i) {
      const Node &n = st.nodes[i];
      for (int a : n.args)
        if (a < 0 || a >= (int)i)
          return fail(s, -1, "node " + std::to_string(i) + " uses node " + std::to_string(a) +
                                 ", which does not come before it");
      auto type = [&](int k) { return st.nodes[n.args[k]].type; };
      auto want = [&](bool ok, const char *what) {
        if (!ok)
          fail(s, n.buffer >= 0 ? n.buffer : -1,
               "node " + std::to_string(i) + " (" + typeName(n.type) + "): " + what);
      };
      switch (n.op) {
      case Node::Load:
      case Node::Gather:
        if (!known(s, n.buffer))
          return;
        read(s, n.buffer);
        want(n.type == valueTypeOf(p.buffers[n.buffer].type),
             "loads a buffer of another element type");
        if (n.op == Node::Gather)
          want(type(0) == ElemType::I64, "gathers with an index that is not i64");
        inBounds(s, n.buffer, st.shape, n.strides, n.offset,
                 n.op == Node::Gather ? (n.extent - 1) * n.ivalue : 0);
        break;
      case Node::Add: case Node::Sub: case Node::Mul: case Node::Div: case Node::Max:
        want(type(0) == n.type && type(1) == n.type, "its operands have other types");
        break;
      case Node::Gt: case Node::Eq: case Node::Ne: case Node::Lt: case Node::Le: case Node::Ge:
        want(n.type == ElemType::I1 && type(0) == type(1), "compares operands of two types");
        break;
      case Node::Not: case Node::And: case Node::Or:
        want(n.type == ElemType::I1 && type(0) == ElemType::I1 &&
                 (n.args.size() < 2 || type(1) == ElemType::I1),
             "is logic on operands that are not i1");
        break;
      case Node::BitAnd: case Node::BitOr: case Node::BitXor:
        want(n.type == ElemType::I64 && type(0) == ElemType::I64 && type(1) == ElemType::I64,
             "is bitwise on operands that are not i64");
        break;
      case Node::Select:
        want(type(0) == ElemType::I1 && type(1) == n.type && type(2) == n.type,
             "selects between operands of other types");
        break;
      default:
        break;
      }
    }
    for (const Reduction &r : st.reductions)
      if (r.node < 0 || r.node >= (int)st.nodes.size() || st.nodes[r.node].type != ElemType::F32)
        return fail(s, -1, "reduces a node that is not f32");
    for (const Store &w : st.stores) {
      if (!known(s, w.buffer))
        return;
      if (w.node < 0 || w.node >= (int)st.nodes.size())
        return fail(s, w.buffer, "is stored from a node that does not exist");
      if (st.nodes[w.node].type != valueTypeOf(p.buffers[w.buffer].type))
        return fail(s, w.buffer, std::string("(") + typeName(p.buffers[w.buffer].type) +
                                     ") is stored from a " + typeName(st.nodes[w.node].type) +
                                     " node");
      inBounds(s, w.buffer, st.shape, w.strides, w.offset);
      write(s, w.buffer);
    }
  }

  void gemm(int s) {
    const Gemm &g = p.steps[s].gemm;
    for (int b : {g.a, g.b, g.c})
      if (!known(s, b))
        return;
    read(s, g.a);
    read(s, g.b);
    // A beta other than zero reads C: a gradient buffer, or an earlier write.
    if (g.beta == Gemm::Beta::One || (g.beta == Gemm::Beta::FirstZeroElseOne &&
                                      p.buffers[g.c].place != Buffer::Place::Grad))
      read(s, g.c);
    ElemType ta = p.buffers[g.a].type, tb = p.buffers[g.b].type, tc = p.buffers[g.c].type;
    if (!isFloat(ta) || ta != tb || !isFloat(tc))
      return fail(s, g.c, std::string("is the product of ") + typeName(ta) + " and " +
                              typeName(tb) + " operands");
    auto span = [&](int b, int64_t stride, int64_t matrix) {
      if (g.batch > 0 && (g.batch - 1) * stride + matrix > p.buffers[b].count())
        fail(s, b, "is a GEMM operand of " + std::to_string(g.batch) + " x " +
                       std::to_string(matrix) + " elements at stride " + std::to_string(stride) +
                       ", outside its " + std::to_string(p.buffers[b].count()));
    };
    // A matrix of r rows of c stored ld apart spans (r - 1) ld + c elements;
    // a leading dimension is a buffer's pitch, for one product.
    auto matrix = [&](int b, int64_t ld, int64_t rows, int64_t cols) -> int64_t {
      if (ld != p.buffers[b].pitch || (ld && (g.batch != 1 || ld < cols)))
        fail(s, b, "is a GEMM operand with leading dimension " + std::to_string(ld) +
                       " and rows " + std::to_string(p.buffers[b].pitch) +
                       " apart (0: dense), or a padded one in a batch of products");
      return rows ? (rows - 1) * (ld ? ld : cols) + cols : 0;
    };
    span(g.a, g.strideA, g.transA ? matrix(g.a, g.lda, g.k, g.m) : matrix(g.a, g.lda, g.m, g.k));
    span(g.b, g.strideB, g.transB ? matrix(g.b, g.ldb, g.n, g.k) : matrix(g.b, g.ldb, g.k, g.n));
    span(g.c, g.strideC, matrix(g.c, g.ldc, g.m, g.n));
    if ((g.lda || g.ldb || g.ldc) && (g.gelu || g.dgelu))
      fail(s, g.c, "is a product with a GELU epilogue and a padded operand");
    write(s, g.c);
    epilogue(s, g);
  }

  void epilogue(int s, const Gemm &g) {
    bool biasGrad = g.biasGradOf != Gemm::BiasGradOf::None;
    if ((g.gelu || g.dgelu) != (g.aux >= 0) || (g.gelu && g.dgelu))
      return fail(s, g.c, "has a GELU epilogue without its preactivation buffer, or one without it");
    if (g.gelu || g.dgelu) {
      if (g.batch != 1 || biasGrad || g.beta != Gemm::Beta::Zero || (g.dgelu && g.bias >= 0))
        return fail(s, g.c, "has a GELU epilogue with batch, beta or a bias gradient");
      if (!known(s, g.aux))
        return;
      if (p.buffers[g.aux].count() != g.m * g.n || p.buffers[g.aux].type != p.buffers[g.c].type)
        return fail(s, g.aux, "is a GELU epilogue's preactivation, which must be " +
                                  std::to_string(g.m * g.n) + " elements of C's type");
      g.gelu ? write(s, g.aux) : read(s, g.aux);
    }
    if (g.bias < 0 && !biasGrad && g.biasGrad < 0)
      return;
    if (g.batch != 1 || (g.bias >= 0 && (biasGrad || g.beta != Gemm::Beta::Zero)) ||
        biasGrad != (g.biasGrad >= 0))
      return fail(s, g.c, "has an epilogue with batch " + std::to_string(g.batch) +
                              ", a bias, beta and a bias gradient that do not go together");
    int v = g.bias >= 0 ? g.bias : g.biasGrad;
    if (!known(s, v))
      return;
    int64_t len = g.biasGradOf == Gemm::BiasGradOf::A ? g.m : g.n;
    if (p.buffers[v].count() != len || !isFloat(p.buffers[v].type))
      return fail(s, v, "is a GEMM epilogue's vector, which must be " + std::to_string(len) +
                            " float elements");
    if (g.bias >= 0)
      read(s, g.bias);
    else
      write(s, g.biasGrad);
  }

  void call(int s) {
    const LibraryCall &c = p.steps[s].call;
    int n = (int)c.buffers.size();
    if (c.outputs < 1 || c.outputs > n)
      return fail(s, -1, std::string(kernelTemplate(c.kernel)) + " writes " + std::to_string(c.outputs) + " of its " +
                             std::to_string(n) + " buffers");
    if (!c.offsets.empty() && c.offsets.size() != size_t(n))
      return fail(s, -1, std::string(kernelTemplate(c.kernel)) + " has " +
                             std::to_string(c.offsets.size()) + " offsets for " +
                             std::to_string(n) + " buffers");
    for (int b : c.buffers)
      if (known(s, b) && p.buffers[b].pitch)
        return fail(s, b, std::string(kernelTemplate(c.kernel)) +
                              " reads its tensors dense, and this buffer's rows are padded");
    std::vector<int64_t> extents = kernelExtents(c);
    if (extents.empty())
      return fail(s, -1, std::string(kernelTemplate(c.kernel)) + " has no form with " +
                             std::to_string(c.constants.size()) + " constants and " +
                             std::to_string(n) + " buffers");
    for (int i = 0; i < n; ++i) {
      int64_t from = c.offsets.empty() ? 0 : c.offsets[i];
      if (!known(s, c.buffers[i]))
        return;
      int64_t count = p.buffers[c.buffers[i]].count();
      if (from < 0 || extents[i] < 0 || from > count || extents[i] > count - from)
        return fail(s, c.buffers[i], "is passed to " + std::string(kernelTemplate(c.kernel)) +
                                         " as argument " + std::to_string(i) + ", which spans " +
                                         std::to_string(extents[i]) + " elements from element " +
                                         std::to_string(from) + ", and the buffer holds " +
                                         std::to_string(count));
    }
    bool accumulates = false;
    for (const LibraryCall::Scalar &a : c.scalars)
      accumulates |= a.kind == LibraryCall::Scalar::First;
    for (int i = 0; i < n - c.outputs; ++i)
      read(s, c.buffers[i]);
    for (int i = n - c.outputs; i < n && error.empty(); ++i) {
      // Accumulating into its output reads it after the window's first.
      if (accumulates && known(s, c.buffers[i]) &&
          p.buffers[c.buffers[i]].place != Buffer::Place::Grad)
        read(s, c.buffers[i]);
      write(s, c.buffers[i]);
    }
  }

  void step(int s) {
    const Step &st = p.steps[s];
    pendingWrites.clear();
    if (st.kind == Step::Gemm)
      gemm(s);
    else if (st.kind == Step::LibraryCall)
      call(s);
    else if (st.reduced.size() != st.shape.size())
      fail(s, -1, "marks " + std::to_string(st.reduced.size()) + " of its " +
                      std::to_string(st.shape.size()) + " dims reduced or not");
    else
      nodes(s);
    // A step's writes count for the steps after it.
    for (int b : pendingWrites)
      written[b] = 1;
  }

  void arenaOverlaps() {
    struct Range {
      int buffer;
      int64_t begin, end, lo, hi; // steps, then bytes [lo, hi)
    };
    std::vector<Range> arena;
    for (const auto &[b, steps] : live) {
      const Buffer &buf = p.buffers[b];
      if (buf.place != Buffer::Place::Arena)
        continue;
      if (buf.offset < 0 || buf.offset + buf.bytes() > p.arenaBytes)
        return fail(steps.first, b, "lies at bytes [" + std::to_string(buf.offset) + ", " +
                                        std::to_string(buf.offset + buf.bytes()) +
                                        "), outside the arena's " +
                                        std::to_string(p.arenaBytes));
      arena.push_back({b, steps.first, steps.second, buf.offset, buf.offset + buf.bytes()});
    }
    std::sort(arena.begin(), arena.end(),
              [](const Range &a, const Range &b) { return a.lo < b.lo; });
    for (size_t i = 0; i < arena.size(); ++i)
      for (size_t j = i + 1; j < arena.size() && arena[j].lo < arena[i].hi; ++j) {
        const Range &a = arena[i], &b = arena[j];
        if (a.begin <= b.end && b.begin <= a.end && a.lo < a.hi && b.lo < b.hi)
          return fail(std::max(a.begin, b.begin), b.buffer,
                      "shares arena bytes [" + std::to_string(b.lo) + ", " +
                          std::to_string(std::min(a.hi, b.hi)) + ") with b" +
                          std::to_string(a.buffer) + " '" + p.buffers[a.buffer].name +
                          "', and both are live");
      }
  }

  const Program &p;
  std::vector<char> written;
  std::vector<int> pendingWrites;
  std::map<int, std::pair<int64_t, int64_t>> live; // buffer: first and last step
  std::string error;
};

} // namespace

std::string verifyProgram(const Program &program) { return Verifier(program).run(); }

} // namespace otc
