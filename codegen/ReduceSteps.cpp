// Sibling reductions: LayerNorm's scale and bias gradients are two column
// sums over the same rows, each reading the incoming gradient. Adjacent
// Reduce steps over one iteration space become one step, so it is read once.
//
// A column reduction (outputs side by side, a long reduced dim before them:
// LayerNorm's scale and bias gradients over B*T rows) gives each output one
// thread, which then walks the whole reduced dim alone: 768 threads summing
// 8192 rows each at GPT-2's size, a few SMs busy. Split it in two steps: the
// first sums chunks of rows into float32 partials [S, O] (S x O threads),
// the second sums the S partials per output and runs the original epilogue.
// The order of the sums is fixed by the program, so both targets, and every
// run, give the same bits.
//
// BatchNorm's statistics and its gradient's sums reduce [N, C, H W] over N
// and H W per channel: C outputs (64 in ResNet-50's first stage), each one
// block walking N H W elements. Split them the same way: N C rows of H W
// into partials [N, C], then a column sum over N.
#include "ReduceSteps.h"

#include <algorithm>
#include <cstdlib>
#include <set>

namespace otc {
namespace {

/// The nodes `roots` depend on, in index order (operands come first).
std::vector<int> reachable(const Step &s, const std::vector<int> &roots) {
  std::vector<char> need(s.nodes.size(), 0);
  for (int r : roots)
    need[r] = 1;
  for (int i = (int)s.nodes.size() - 1; i >= 0; --i)
    if (need[i])
      for (int a : s.nodes[i].args)
        need[a] = 1;
  std::vector<int> out;
  for (size_t i = 0; i < s.nodes.size(); ++i)
    if (need[i])
      out.push_back((int)i);
  return out;
}

/// Copies `which` of `from`'s nodes into `to`, strides rewritten by
/// `strides`; returns the old-to-new index map (-1 where not copied).
template <class F>
std::vector<int> copyNodes(const Step &from, const std::vector<int> &which, Step &to, F strides) {
  std::vector<int> map(from.nodes.size(), -1);
  for (int i : which) {
    Node n = from.nodes[i];
    for (int &a : n.args)
      a = map[a];
    if (n.op == Node::Load)
      n.strides = strides(n.strides);
    map[i] = (int)to.nodes.size();
    to.nodes.push_back(std::move(n));
  }
  return map;
}

std::set<int> written(const Step &s) {
  std::set<int> out;
  for (const Store &st : s.stores)
    out.insert(st.buffer);
  return out;
}

std::set<int> read(const Step &s) {
  std::set<int> out;
  for (const Node &n : s.nodes)
    if (n.buffer >= 0)
      out.insert(n.buffer);
  return out;
}

/// Whether a reduction's body reads another reduction (a later pass): its
/// partial sums would read partial values.
std::vector<int> bodiesOf(const Step &s) {
  std::vector<int> bodies;
  for (const Reduction &r : s.reductions)
    bodies.push_back(r.node);
  return bodies;
}

bool multiPass(const Step &s) {
  for (int i : reachable(s, bodiesOf(s)))
    if (s.nodes[size_t(i)].op == Node::Reduced)
      return true;
  return false;
}

bool meets(const std::set<int> &a, const std::set<int> &b) {
  return std::any_of(a.begin(), a.end(), [&](int x) { return b.count(x) > 0; });
}

bool sameNode(const Node &a, const Node &b) {
  return a.op == b.op && a.type == b.type && a.args == b.args && a.buffer == b.buffer &&
         a.strides == b.strides && a.value == b.value && a.ivalue == b.ivalue &&
         a.extent == b.extent && a.offset == b.offset;
}

/// The index of a node of `s` equal to `n`, which is added if none is.
int shared(Step &s, Node n) {
  auto same = std::find_if(s.nodes.begin(), s.nodes.end(),
                           [&](const Node &m) { return sameNode(m, n); });
  if (same != s.nodes.end())
    return int(same - s.nodes.begin());
  s.nodes.push_back(std::move(n));
  return int(s.nodes.size()) - 1;
}

/// `e`'s strides (over r's kept dims) over `r`'s dims: 0 along the reduced.
std::vector<int64_t> overReduce(const Step &r, const std::vector<int64_t> &strides) {
  std::vector<int64_t> out(r.shape.size(), 0);
  size_t k = 0;
  for (size_t d = 0; d < r.shape.size(); ++d)
    if (!r.reduced[d])
      out[d] = strides[k++];
  return out;
}

/// The store of `r` that a load (strides over r's dims) of `e` reads, or
/// null where r does not write the buffer.
const Store *storeRead(const Step &r, const Node &load, const std::vector<int64_t> &strides) {
  for (const Store &st : r.stores)
    if (st.buffer == load.buffer && st.strides == strides && st.offset == load.offset)
      return &st;
  return nullptr;
}

} // namespace

bool foldsIntoReduce(const Program &p, const Step &r, const Step &e) {
  if (r.kind != Step::Reduce || e.kind != Step::Elementwise)
    return false;
  std::vector<int64_t> kept;
  for (size_t d = 0; d < r.shape.size(); ++d)
    if (!r.reduced[d])
      kept.push_back(r.shape[d]);
  if (kept != e.shape)
    return false;
  std::set<int> wr = written(r);
  for (const Node &n : e.nodes) {
    if (n.op == Node::Coord || n.op == Node::Gather || n.op == Node::Uniform)
      return false;
    if (n.op != Node::Load || !wr.count(n.buffer))
      continue;
    if (p.buffers[size_t(n.buffer)].type != ElemType::F32 ||
        !storeRead(r, n, overReduce(r, n.strides)))
      return false;
  }
  return !meets(written(e), read(r)) && !meets(written(e), wr);
}

void foldIntoReduce(Step &r, const Step &e) {
  std::vector<int> map(e.nodes.size());
  for (size_t i = 0; i < e.nodes.size(); ++i) {
    Node n = e.nodes[i];
    for (int &a : n.args)
      a = map[size_t(a)];
    if (n.op == Node::Load) {
      n.strides = overReduce(r, n.strides);
      if (const Store *st = storeRead(r, n, n.strides)) {
        map[i] = st->node;
        continue;
      }
    }
    map[i] = shared(r, std::move(n));
  }
  for (const Store &st : e.stores)
    r.stores.push_back({st.buffer, overReduce(r, st.strides), map[size_t(st.node)], st.offset});
  r.recomputed = r.recomputed && e.recomputed;
}

bool mergeableReduces(const Step &a, const Step &b) {
  if (a.kind != Step::Reduce || b.kind != Step::Reduce || a.shape != b.shape ||
      a.reduced != b.reduced)
    return false;
  std::set<int> wa = written(a), wb = written(b);
  return !meets(wa, read(b)) && !meets(wa, wb) && !meets(wb, read(a));
}

void mergeReduces(Step &a, const Step &b) {
  int base = (int)a.reductions.size();
  std::vector<int> map(b.nodes.size());
  for (size_t i = 0; i < b.nodes.size(); ++i) {
    Node n = b.nodes[i];
    for (int &x : n.args)
      x = map[x];
    if (n.op == Node::Reduced)
      n.ivalue += base;
    map[i] = shared(a, std::move(n));
  }
  for (const Reduction &r : b.reductions)
    a.reductions.push_back({r.kind, map[r.node]});
  for (const Store &st : b.stores)
    a.stores.push_back({st.buffer, st.strides, map[st.node], st.offset});
  a.recomputed = a.recomputed && b.recomputed;
}

int64_t columnChunk(const Step &s) {
  if (s.kind != Step::Reduce || s.shape.size() != 2 || !s.reduced[0] || s.reduced[1])
    return 0;
  int64_t rows = s.shape[0], outputs = s.shape[1];
  // Enough outputs fill the device alone; short columns are cheap.
  if (outputs > kSplitMaxOutputs || rows < kSplitMinRows || multiPass(s))
    return 0;
  for (const Node &n : s.nodes)
    if (n.op == Node::Coord || n.op == Node::Gather || n.op == Node::Uniform)
      return 0; // they read the row coordinate, which the split renumbers
  // The divisor of `rows` nearest kSplitChunk, within a factor of two.
  int64_t best = 0;
  for (int64_t c = kSplitChunk / 2; c <= kSplitChunk * 2; ++c)
    if (rows % c == 0 && (!best || std::llabs(c - kSplitChunk) < std::llabs(best - kSplitChunk)))
      best = c;
  return best;
}

namespace {

/// An empty Reduce step of `s`'s op over `shape`.
void start(const Step &s, Step &t, std::vector<int64_t> shape, std::vector<bool> reduced) {
  t = Step();
  t.kind = Step::Reduce;
  t.origin = s.origin;
  t.recomputed = s.recomputed;
  t.shape = std::move(shape);
  t.reduced = std::move(reduced);
}

/// `second`, a Reduce step [parts (reduced), outputs]: reduces the
/// [reductions, parts, outputs] float32 `partials` per output, then runs
/// `s`'s epilogue (its loads' strides mapped by `strides`) and stores.
template <class F>
void sumPartials(const Step &s, int partials, int64_t parts, int64_t outputs, Step &second,
                 F strides) {
  start(s, second, {parts, outputs}, {true, false});
  for (size_t k = 0; k < s.reductions.size(); ++k) {
    Node load{Node::Load, ElemType::F32};
    load.buffer = partials;
    load.strides = {outputs, 1};
    load.offset = (int64_t)k * parts * outputs;
    second.nodes.push_back(load);
    second.reductions.push_back({s.reductions[k].kind, (int)k});
  }
  std::vector<int> roots;
  for (const Store &st : s.stores)
    roots.push_back(st.node);
  // An epilogue's loads do not move along the reduced dims (stride 0).
  auto epilogue = copyNodes(s, reachable(s, roots), second, strides);
  for (const Store &st : s.stores)
    second.stores.push_back({st.buffer, strides(st.strides), epilogue[st.node], st.offset});
}

/// `first`, started: `s`'s reductions, their bodies' loads' strides mapped
/// by `strides`, reduction k stored into `partials` with `stores` strides
/// from element k * `size`.
template <class F>
void reduceIntoPartials(const Step &s, Step &first, F strides, int partials,
                        std::vector<int64_t> stores, int64_t size) {
  auto map = copyNodes(s, reachable(s, bodiesOf(s)), first, strides);
  for (size_t k = 0; k < s.reductions.size(); ++k) {
    first.reductions.push_back({s.reductions[k].kind, map[s.reductions[k].node]});
    Node red{Node::Reduced, ElemType::F32};
    red.ivalue = (int64_t)k;
    first.nodes.push_back(red);
    first.stores.push_back({partials, stores, (int)first.nodes.size() - 1, (int64_t)k * size});
  }
}

} // namespace

void splitColumns(const Step &s, int64_t chunk, int partials, Step &first, Step &second) {
  int64_t parts = s.shape[0] / chunk, outputs = s.shape[1];
  // The partial sums: [parts, chunk (reduced), outputs].
  start(s, first, {parts, chunk, outputs}, {false, true, false});
  reduceIntoPartials(
      s, first,
      [&](const std::vector<int64_t> &st) {
        return std::vector<int64_t>{st[0] * chunk, st[0], st[1]};
      },
      partials, {outputs, 0, 1}, parts * outputs);
  // Their sums per output, then the original epilogue and stores.
  sumPartials(s, partials, parts, outputs, second,
              [](const std::vector<int64_t> &st) { return st; });
}

bool splitsOuter(const Step &s) {
  if (s.kind != Step::Reduce || s.shape.size() != 3 || !s.reduced[0] || s.reduced[1] ||
      !s.reduced[2])
    return false;
  int64_t outer = s.shape[0], outputs = s.shape[1], inner = s.shape[2];
  // Enough outputs fill the device alone; short rows are a warp's or less.
  if (outputs > kSplitMaxOutputs || outer < 2 || inner < 32 || outer * inner < kSplitMinSums ||
      multiPass(s))
    return false;
  // The epilogue moves to a step without the inner dim: it must not vary
  // along the reduced dims (no row-shaped result).
  std::vector<int> roots;
  for (const Store &st : s.stores) {
    if (st.strides[0] || st.strides[2])
      return false;
    roots.push_back(st.node);
  }
  for (int i : reachable(s, roots)) {
    const Node &n = s.nodes[size_t(i)];
    if ((n.op == Node::Load && (n.strides[0] || n.strides[2])) ||
        (n.op == Node::Coord && n.ivalue != 1) || n.op == Node::Gather || n.op == Node::Uniform)
      return false;
  }
  return true;
}

void splitOuter(const Step &s, int partials, Step &first, Step &second) {
  int64_t outer = s.shape[0], outputs = s.shape[1];
  // The partial reductions: [outer, outputs, inner (reduced)], the same
  // iteration space, so every load and coordinate keeps its meaning.
  start(s, first, s.shape, {false, false, true});
  reduceIntoPartials(
      s, first, [](const std::vector<int64_t> &st) { return st; }, partials, {outputs, 1, 0},
      outer * outputs);
  // [outer (reduced), outputs]: the dims of `s` without the inner one.
  sumPartials(s, partials, outer, outputs, second, [](const std::vector<int64_t> &st) {
    return std::vector<int64_t>{st[0], st[1]};
  });
}

} // namespace otc
