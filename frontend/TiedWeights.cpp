// Transposed copies of initializers tied back to their source, and merged
// equal ones split again (TiedWeights.h).
#include "TiedWeights.h"
#include "GraphImporter.h"
#include "ImportHelpers.h"
#include "ParameterNames.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

namespace otc {
namespace {

/// The bytes of a checked float32 or float64 initializer's values, inline
/// or where they lie, or "" when the tensor is another type or holds none
/// (a dropped parameter's stand-in).
std::string_view valuesOf(const onnx::TensorProto &t, TensorBytes &bytes) {
  int64_t count = 1;
  for (int64_t d : t.dims())
    count *= d;
  if (t.data_type() == onnx::TensorProto::FLOAT) {
    if (t.float_data_size() == count && count > 0)
      return {reinterpret_cast<const char *>(t.float_data().data()), size_t(count) * 4};
    return bytes.of(t, size_t(count) * 4);
  }
  if (t.data_type() == onnx::TensorProto::DOUBLE) {
    if (t.double_data_size() == count && count > 0)
      return {reinterpret_cast<const char *>(t.double_data().data()), size_t(count) * 8};
    return bytes.of(t, size_t(count) * 8);
  }
  return {};
}

/// The float32 values of a checked initializer, or null for another type.
/// They may lie anywhere in a mapped file: read them with at().
const char *floatsOf(const onnx::TensorProto &t, TensorBytes &bytes) {
  if (t.data_type() != onnx::TensorProto::FLOAT)
    return nullptr;
  std::string_view v = valuesOf(t, bytes);
  return v.empty() ? nullptr : v.data();
}

/// Value `i` of float32 values at any alignment.
float at(const char *values, int64_t i) {
  float v;
  std::memcpy(&v, values + i * 4, sizeof v);
  return v;
}

/// One value repeated (a fresh zero or one initialisation, or a scalar):
/// equal values there say nothing about the model.
bool repeated(std::string_view bytes, size_t width) {
  for (size_t i = width; i < bytes.size(); i += width)
    if (bytes.compare(i, width, bytes.substr(0, width)) != 0)
      return false;
  return true;
}

struct Matrix {
  const onnx::TensorProto *tensor;
  int64_t rows, cols;
  const char *values; // float32, read with at()
  int index;          // in the initializers
};

/// Bitwise equal floats (so -0 and 0 differ, and a NaN matches itself).
bool same(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool isTransposeOf(const Matrix &b, const Matrix &a) {
  if (b.rows != a.cols || b.cols != a.rows)
    return false;
  for (int64_t i = 0; i < b.rows; ++i)
    for (int64_t j = 0; j < b.cols; ++j)
      if (!same(at(b.values, i * b.cols + j), at(a.values, j * a.cols + i)))
        return false;
  return true;
}

bool uniform(const Matrix &m) {
  for (int64_t i = 1; i < m.rows * m.cols; ++i)
    if (!same(at(m.values, i), at(m.values, 0)))
      return false;
  return true;
}

/// The float32 initializers of two dims of at least 2, whose values are
/// at hand (they are not read here).
std::vector<Matrix> matricesOf(const onnx::GraphProto &g, TensorBytes &bytes) {
  std::vector<Matrix> out;
  for (int i = 0; i < g.initializer_size(); ++i) {
    const onnx::TensorProto &t = g.initializer(i);
    if (t.dims_size() != 2 || t.dims(0) < 2 || t.dims(1) < 2)
      continue;
    if (Matrix m{&t, t.dims(0), t.dims(1), floatsOf(t, bytes), i}; m.values)
      out.push_back(m);
  }
  return out;
}

/// Makes `n` a 2-D Transpose.
void makeTranspose(onnx::NodeProto &n) {
  n.set_op_type("Transpose");
  onnx::AttributeProto *perm = n.add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto::INTS);
  perm->add_ints(1);
  perm->add_ints(0);
}

/// The names a tie must leave alone: read in a subgraph, or a graph output.
std::set<std::string> readElsewhere(const onnx::GraphProto &g) {
  std::set<std::string> names;
  for (const auto &n : g.node())
    forEachNestedRead(n, [&](const std::string &name, const onnx::NodeProto *, int) {
      names.insert(name);
    });
  for (const auto &o : g.output())
    names.insert(o.name());
  return names;
}

/// `made`'s nodes, in order, at the head of the graph.
void prependNodes(onnx::GraphProto &g, onnx::GraphProto &made) {
  google::protobuf::RepeatedPtrField<onnx::NodeProto> head;
  for (auto &n : *made.mutable_node())
    *head.Add() = std::move(n);
  for (auto &n : *g.mutable_node())
    *head.Add() = std::move(n);
  g.mutable_node()->Swap(&head);
}

/// Each copy leaves the initializers (and the graph inputs, where an old
/// exporter listed initializers) and becomes a node at the head of the
/// graph reading its source: Transpose, or Identity.
void replaceByNodes(onnx::GraphProto &g, const std::map<std::string, std::string> &sourceOf,
                    bool transposed) {
  auto keep = [&](auto *field) {
    int out = 0;
    for (int i = 0; i < field->size(); ++i)
      if (!sourceOf.count(field->Get(i).name()))
        field->SwapElements(out++, i);
    while (field->size() > out)
      field->RemoveLast();
  };
  keep(g.mutable_initializer());
  keep(g.mutable_input());
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (const auto &[copy, source] : sourceOf) {
    onnx::NodeProto *n = nodes.Add();
    n->set_op_type("Identity");
    n->set_name("otc_tied/" + copy);
    n->add_input(source);
    n->add_output(copy);
    if (transposed)
      makeTranspose(*n);
  }
  for (auto &n : *g.mutable_node())
    *nodes.Add() = std::move(n);
  g.mutable_node()->Swap(&nodes);
}

} // namespace

std::vector<std::string> tieTransposedCopies(onnx::ModelProto &model, TensorBytes &bytes) {
  onnx::GraphProto &g = *model.mutable_graph();
  // Candidates by shape: a copy's source has the reversed shape.
  std::multimap<std::pair<int64_t, int64_t>, Matrix> byShape;
  std::vector<Matrix> matrices = matricesOf(g, bytes);
  llvm::erase_if(matrices, uniform);
  for (const Matrix &m : matrices)
    byShape.emplace(std::make_pair(m.rows, m.cols), m);
  std::vector<std::string> tied;
  std::map<std::string, std::string> sourceOf; // copy -> source
  // The copy is the exporter's folded constant (named "onnx::..."), or else
  // the later initializer; a tensor is tied once.
  auto folded = [](const Matrix &m) { return m.tensor->name().rfind("onnx::", 0) == 0; };
  std::set<const onnx::TensorProto *> done;
  for (size_t i = 0; i < matrices.size(); ++i) {
    const Matrix &b = matrices[i];
    auto [lo, hi] = byShape.equal_range({b.cols, b.rows});
    for (auto it = lo; it != hi && !done.count(b.tensor); ++it) {
      const Matrix &a = it->second;
      // A square matrix may be its own transpose. Equal symmetric matrices
      // (ConViT's identity-initialised value weights, one per block, merged
      // by the export and split again) are equal copies, not a transpose:
      // left to the merge's rules.
      if (a.index >= b.index || done.count(a.tensor) || !isTransposeOf(b, a) ||
          (a.rows == a.cols && std::memcmp(a.values, b.values, size_t(a.rows * a.cols) * 4) == 0))
        continue;
      bool copyIsA = folded(a) && !folded(b);
      const Matrix &copy = copyIsA ? a : b, &source = copyIsA ? b : a;
      sourceOf[copy.tensor->name()] = source.tensor->name();
      done.insert(a.tensor);
      done.insert(b.tensor);
    }
  }
  replaceByNodes(g, sourceOf, true);
  for (const auto &[copy, source] : sourceOf)
    tied.push_back("'" + copy + "' is '" + source + "' transposed");
  return tied;
}

namespace {

/// Whether A's transpose is B's block of A.cols rows from row `row` and
/// A.rows columns from column `col`.
bool holdsTransposeAt(const Matrix &b, const Matrix &a, int64_t row, int64_t col) {
  for (int64_t i = 0; i < a.cols; ++i)
    for (int64_t j = 0; j < a.rows; ++j)
      if (!same(at(b.values, (row + i) * b.cols + col + j), at(a.values, j * a.cols + i)))
        return false;
  return true;
}

onnx::NodeProto *addInts(onnx::GraphProto &g, const std::string &name,
                         std::vector<int64_t> values) {
  onnx::NodeProto *n = g.add_node();
  n->set_op_type("Constant");
  n->set_name(name);
  n->add_output(name);
  onnx::AttributeProto *a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  onnx::TensorProto *t = a->mutable_t();
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(int64_t(values.size()));
  for (int64_t v : values)
    t->add_int64_data(v);
  return n;
}

} // namespace

std::vector<std::string> tieTransposedBlocks(onnx::ModelProto &model, TensorBytes &bytes) {
  onnx::GraphProto &g = *model.mutable_graph();
  // Values are read only where shapes fit and first elements agree: the
  // weights' bytes are not all read again.
  std::vector<Matrix> matrices = matricesOf(g, bytes);
  // Copies left alone: read in a subgraph, a graph output, or tied already
  // (a saved model keeps the tie's nodes).
  std::set<std::string> keep = readElsewhere(g);
  for (const auto &n : g.node())
    if (n.input_size() && n.name() == "otc_tied/" + n.input(0) + "/rest") // the tie's Slice
      keep.insert(n.input(0));
  int opset = defaultOpset(model);
  struct Block {
    std::string copy, source;
    int axis;
    bool leading;
    int64_t size, rest; // the block's rows (or columns), and the others'
  };
  std::vector<Block> blocks;
  for (const Matrix &b : matrices) {
    if (b.tensor->name().rfind("onnx::", 0) != 0 || keep.count(b.tensor->name()))
      continue;
    for (const Matrix &a : matrices) {
      if (&a == &b)
        continue;
      std::optional<Block> found;
      if (b.cols == a.rows && b.rows > a.cols) { // rows
        if (holdsTransposeAt(b, a, 0, 0))
          found = Block{b.tensor->name(), a.tensor->name(), 0, true, a.cols, b.rows - a.cols};
        else if (holdsTransposeAt(b, a, b.rows - a.cols, 0))
          found = Block{b.tensor->name(), a.tensor->name(), 0, false, a.cols, b.rows - a.cols};
      } else if (b.rows == a.cols && b.cols > a.rows) { // columns
        if (holdsTransposeAt(b, a, 0, 0))
          found = Block{b.tensor->name(), a.tensor->name(), 1, true, a.rows, b.cols - a.rows};
        else if (holdsTransposeAt(b, a, 0, b.cols - a.rows))
          found = Block{b.tensor->name(), a.tensor->name(), 1, false, a.rows, b.cols - a.rows};
      }
      if (found && !uniform(a)) { // one repeated value matches by chance
        blocks.push_back(*found);
        break;
      }
    }
  }
  std::vector<std::string> lines;
  onnx::GraphProto made; // the new nodes, in order
  for (const Block &k : blocks) {
    std::string base = "otc_tied/" + k.copy, joined = base + "/joined";
    onnx::NodeProto *t = made.add_node();
    makeTranspose(*t);
    t->set_name(base + "/transposed");
    t->add_input(k.source);
    t->add_output(base + "/transposed");
    // The rest of the copy: rows (or columns) past the block, or before it.
    int64_t from = k.leading ? k.size : 0, to = k.leading ? k.size + k.rest : k.rest;
    onnx::NodeProto *slice = nullptr;
    if (opset >= 10) {
      addInts(made, base + "/starts", {from});
      addInts(made, base + "/ends", {to});
      addInts(made, base + "/axes", {k.axis});
      slice = made.add_node();
      slice->set_op_type("Slice");
      for (const char *in : {"", "/starts", "/ends", "/axes"})
        slice->add_input(*in ? base + in : k.copy);
    } else {
      slice = made.add_node();
      slice->set_op_type("Slice");
      slice->add_input(k.copy);
      for (auto [attr, v] : {std::pair<const char *, int64_t>{"starts", from}, {"ends", to},
                             {"axes", k.axis}}) {
        onnx::AttributeProto *a = slice->add_attribute();
        a->set_name(attr);
        a->set_type(onnx::AttributeProto::INTS);
        a->add_ints(v);
      }
    }
    slice->set_name(base + "/rest");
    slice->add_output(base + "/rest");
    onnx::NodeProto *concat = made.add_node();
    concat->set_op_type("Concat");
    concat->set_name(joined);
    concat->add_input(k.leading ? base + "/transposed" : base + "/rest");
    concat->add_input(k.leading ? base + "/rest" : base + "/transposed");
    concat->add_output(joined);
    onnx::AttributeProto *axis = concat->add_attribute();
    axis->set_name("axis");
    axis->set_type(onnx::AttributeProto::INT);
    axis->set_i(k.axis);
    for (auto &n : *g.mutable_node())
      for (auto &in : *n.mutable_input())
        if (in == k.copy)
          in = joined;
    lines.push_back("'" + k.copy + "' holds '" + k.source + "' transposed in its " +
                    (k.leading ? "first " : "last ") + std::to_string(k.size) +
                    (k.axis == 0 ? " rows" : " columns"));
  }
  if (!blocks.empty())
    prependNodes(g, made);
  return lines;
}

namespace {

/// The exporter's folded arithmetic on one parameter and a scalar c:
/// F = c - P, P + c (and P - c), P * c, P / c, each one float32 rounding,
/// as PyTorch computes them when folding.
enum class Fold { Sub, Add, Mul, Div };

float applied(Fold op, float p, float c) {
  switch (op) {
  case Fold::Sub:
    return c - p;
  case Fold::Add:
    return p + c;
  case Fold::Mul:
    return p * c;
  case Fold::Div:
    return p / c;
  }
  return 0;
}

/// Whether op(P, c) is P itself.
bool isIdentity(Fold op, float c) {
  return ((op == Fold::Mul || op == Fold::Div) && c == 1.0f) || (op == Fold::Add && c == 0.0f);
}

struct Values {
  const onnx::TensorProto *tensor;
  const char *values; // float32, read with at()
  int64_t count;
};

/// The c for which F = op(P, c) holds bitwise at every element, if any. c is
/// solved at element `big` and tried with its neighbours, as rounding may
/// have moved it by an ulp or two.
std::optional<float> foldConstant(Fold op, const Values &f, const Values &p, int64_t big) {
  double fb = at(f.values, big), pb = at(p.values, big);
  double guess = op == Fold::Sub ? fb + pb : op == Fold::Add ? fb - pb
                 : op == Fold::Mul ? (pb != 0 ? fb / pb : NAN)
                                   : (fb != 0 ? pb / fb : NAN);
  if (!std::isfinite(guess) || std::fabs(guess) > 3.4e38)
    return std::nullopt;
  float c = float(guess);
  for (int step = 0; step < 5; ++step) {
    // c, then one and two ulps either side
    float tryC = c;
    for (int k = 0; k < (step + 1) / 2; ++k)
      tryC = std::nextafter(tryC, step % 2 ? INFINITY : -INFINITY);
    bool all = true;
    for (int64_t i = 0; i < f.count && all; ++i)
      all = same(applied(op, at(p.values, i), tryC), at(f.values, i));
    if (all)
      return tryC;
  }
  return std::nullopt;
}

/// Nodes downstream of value `from`, by depth (its readers are 1), up to
/// `limit`; by node index, INT32_MAX where not reached.
std::vector<int> downstream(const onnx::GraphProto &g,
                            const std::unordered_map<std::string, std::vector<int>> &readers,
                            const std::string &from, int limit) {
  std::vector<int> depth(g.node_size(), INT32_MAX);
  std::deque<int> queue;
  auto reach = [&](const std::string &v, int d) {
    if (auto it = readers.find(v); it != readers.end())
      for (int j : it->second)
        if (depth[j] == INT32_MAX)
          depth[j] = d, queue.push_back(j);
  };
  reach(from, 1);
  while (!queue.empty()) {
    int i = queue.front();
    queue.pop_front();
    if (depth[i] < limit)
      for (const auto &out : g.node(i).output())
        reach(out, depth[i] + 1);
  }
  return depth;
}

} // namespace

std::vector<std::string> tieFoldedExpressions(onnx::ModelProto &model, TensorBytes &bytes) {
  onnx::GraphProto &g = *model.mutable_graph();
  int opset = defaultOpset(model);
  if (opset < 7) // the arithmetic nodes' first importable forms
    return {};
  std::set<std::string> keep = readElsewhere(g);
  auto isFolded = [](const std::string &name) { return name.rfind("onnx::", 0) == 0; };
  // Values are read only where a folded tensor and a source share their
  // element count, and then only until they differ.
  std::map<int64_t, int> foldedCounts;
  for (const auto &t : g.initializer())
    if (isFolded(t.name()) && t.data_type() == onnx::TensorProto::FLOAT)
      ++foldedCounts[product(std::vector<int64_t>(t.dims().begin(), t.dims().end()))];
  std::multimap<int64_t, Values> sources; // by element count
  std::map<std::string, Values> folded;   // by name
  for (const auto &t : g.initializer()) {
    int64_t count = product(std::vector<int64_t>(t.dims().begin(), t.dims().end()));
    if (count < 2 || !foldedCounts.count(count))
      continue;
    const char *v = floatsOf(t, bytes);
    if (v && isFolded(t.name()))
      folded.emplace(t.name(), Values{&t, v, count});
    else if (v)
      sources.emplace(count, Values{&t, v, count});
  }
  // Folded values that the export merged because they were equal stay
  // merged (untieMergedCopies keeps anonymous copies read in one module
  // merged: ALBERT's shared layer), but each may be folded from its own
  // parameter (RWKV's 1 - time_mix_key and 1 - time_mix_value, equal at
  // initialisation): each is matched on its own.
  std::map<std::string, std::string> mergedInto; // Identity output -> input
  for (const auto &n : g.node())
    if (n.op_type() == "Identity" && n.input_size() == 1 && n.output_size() == 1 &&
        folded.count(n.input(0)) && isFolded(n.output(0)) && !folded.count(n.output(0)))
      mergedInto[n.output(0)] = n.input(0);
  // (A merged copy's Identity is not a reader: its own readers are the
  // copy's, not the value's it was merged into.)
  std::unordered_map<std::string, std::vector<int>> readers;
  for (int i = 0; i < g.node_size(); ++i)
    if (!(g.node(i).op_type() == "Identity" && g.node(i).output_size() == 1 &&
          mergedInto.count(g.node(i).output(0))))
      for (const auto &in : g.node(i).input())
        readers[in].push_back(i);
  struct Tie {
    std::string copy, source;
    Fold op;
    float c;
    std::vector<int64_t> dims; // the copy's, where they differ from the source's
  };
  std::vector<Tie> ties;
  std::vector<std::string> lines;
  // Each comparison reads at most both tensors; a hostile model of many
  // equal tensors stops being matched past this many elements read.
  int64_t budget = int64_t(1) << 28;
  auto match = [&](const std::string &name, const Values &f) {
    // One value repeated matches any uniform source: says nothing.
    if (keep.count(name) || repeated({f.values, size_t(f.count) * 4}, 4))
      return;
    std::vector<Tie> found;
    auto [lo, hi] = sources.equal_range(f.count);
    for (auto it = lo; it != hi && budget > 0; ++it) {
      const Values &p = it->second;
      // c is solved where P is largest (a product's relative error is
      // least) and where it is smallest (a sum's absolute error is), among
      // its first elements: a pair that does not match fails within a few
      // elements, unread past them.
      int64_t big = 0, small = 0;
      for (int64_t i = 1; i < std::min<int64_t>(p.count, 64); ++i) {
        if (std::fabs(at(p.values, i)) > std::fabs(at(p.values, big)))
          big = i;
        if (std::fabs(at(p.values, i)) < std::fabs(at(p.values, small)))
          small = i;
      }
      budget -= 2 * f.count; // at most, for a match
      bool sameDims = std::equal(f.tensor->dims().begin(), f.tensor->dims().end(),
                                 p.tensor->dims().begin(), p.tensor->dims().end());
      if (!sameDims && opset < 5) // Reshape's shape is an input from opset 5
        continue;
      for (Fold op : {Fold::Mul, Fold::Sub, Fold::Add, Fold::Div})
        if (std::optional<float> c = foldConstant(
                op, f, p, op == Fold::Add || op == Fold::Sub ? small : big)) {
          // An equal copy of the same shape says nothing of a fold: two
          // parameters may start equal (an identity initialisation).
          if (isIdentity(op, *c) && sameDims)
            break;
          found.push_back({name, p.tensor->name(), op, *c,
                           sameDims ? std::vector<int64_t>()
                                    : std::vector<int64_t>(f.tensor->dims().begin(),
                                                           f.tensor->dims().end())});
          break;
        }
    }
    if (found.size() > 1) {
      // Equal sources (a fresh initialisation): the copy's is the one whose
      // readers' results meet the copy's readers' soonest (a lerp
      // x * p + y * (1 - p) adds the two products).
      std::vector<int> fromCopy = downstream(g, readers, name, 6);
      std::vector<int> meet;
      for (const Tie &t : found) {
        std::vector<int> fromSource = downstream(g, readers, t.source, 6);
        int best = INT32_MAX;
        for (size_t i = 0; i < fromCopy.size(); ++i)
          if (fromCopy[i] != INT32_MAX && fromSource[i] != INT32_MAX)
            best = std::min(best, fromCopy[i] + fromSource[i]);
        meet.push_back(best);
      }
      int soonest = *std::min_element(meet.begin(), meet.end());
      if (soonest == INT32_MAX || std::count(meet.begin(), meet.end(), soonest) > 1) {
        lines.push_back("!'" + name + "' is folded from one of " + std::to_string(found.size()) +
                        " equal tensors ('" + found[0].source + "', '" + found[1].source +
                        "', ...) and " +
                        (mergedInto.count(name) ? "stays merged with '" + mergedInto[name] + "'"
                                                : std::string("trains as a tensor of its own")));
        return;
      }
      found = {found[std::min_element(meet.begin(), meet.end()) - meet.begin()]};
    }
    if (found.size() == 1)
      ties.push_back(found[0]);
  };
  for (const auto &[name, f] : folded)
    match(name, f);
  std::map<std::string, std::string> sourceOf;
  for (const Tie &t : ties)
    sourceOf[t.copy] = t.source;
  for (const auto &[copy, from] : mergedInto) {
    // Tied only where its source differs from the value it was merged into.
    size_t before = ties.size();
    match(copy, folded.at(from));
    if (ties.size() > before && sourceOf.count(from) && sourceOf[from] == ties.back().source)
      ties.pop_back();
  }
  // Each copy leaves the initializers (and the inputs), or its Identity the
  // nodes, for nodes at the head of the graph that compute it from its
  // source.
  std::set<std::string> copies;
  for (const Tie &t : ties)
    copies.insert(t.copy);
  auto drop = [&](auto *field, auto nameOf) {
    int out = 0;
    for (int i = 0; i < field->size(); ++i)
      if (!copies.count(nameOf(field->Get(i))))
        field->SwapElements(out++, i);
    while (field->size() > out)
      field->RemoveLast();
  };
  onnx::GraphProto made;
  for (const Tie &t : ties) {
    // (An identity is tied only with a reshape: the Reshape alone.)
    std::string base = "otc_tied/" + t.copy, value = t.source;
    bool copy = isIdentity(t.op, t.c);
    const char *opName[] = {"Sub", "Add", "Mul", "Div"};
    if (!copy) {
      onnx::NodeProto *c = made.add_node();
      c->set_op_type("Constant");
      c->set_name(base + "/c");
      c->add_output(base + "/c");
      onnx::AttributeProto *a = c->add_attribute();
      a->set_name("value");
      a->set_type(onnx::AttributeProto::TENSOR);
      a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
      a->mutable_t()->add_float_data(t.c);
      onnx::NodeProto *n = made.add_node();
      n->set_op_type(opName[int(t.op)]);
      n->set_name(base);
      n->add_input(t.op == Fold::Sub ? base + "/c" : t.source);
      n->add_input(t.op == Fold::Sub ? t.source : base + "/c");
      value = t.dims.empty() ? t.copy : base + "/value";
      n->add_output(value);
    }
    if (!t.dims.empty()) {
      addInts(made, base + "/shape", t.dims);
      onnx::NodeProto *r = made.add_node();
      r->set_op_type("Reshape");
      r->set_name(base + "/reshaped");
      r->add_input(value);
      r->add_input(base + "/shape");
      r->add_output(t.copy);
    }
    char c[32];
    std::snprintf(c, sizeof c, "%.9g", double(t.c));
    std::string form = copy ? "'" + t.source + "'"
                       : t.op == Fold::Sub ? std::string(c) + " - '" + t.source + "'"
                                           : "'" + t.source + "' " + "+*/"[int(t.op) - 1] +
                                                 " " + c;
    lines.push_back("'" + t.copy + "' is " + form + (t.dims.empty() ? "" : ", reshaped"));
  }
  if (ties.empty())
    return lines;
  auto named = [](const auto &t) { return t.name(); };
  drop(g.mutable_initializer(), named);
  drop(g.mutable_input(), named);
  drop(g.mutable_node(), [&](const onnx::NodeProto &n) {
    return n.op_type() == "Identity" && n.output_size() == 1 && mergedInto.count(n.output(0))
               ? n.output(0)
               : std::string();
  });
  prependNodes(g, made);
  return lines;
}

std::vector<std::pair<std::string, std::string>>
untieMergedCopies(onnx::ModelProto &model, TensorBytes &bytes, const llvm::StringSet<> *keep,
                  const llvm::StringSet<> *parameters) {
  onnx::GraphProto &g = *model.mutable_graph();
  std::map<std::string, int> initializer;
  for (int i = 0; i < g.initializer_size(); ++i)
    initializer.emplace(g.initializer(i).name(), i);
  std::set<std::string> outputs;
  for (const auto &o : g.output())
    outputs.insert(o.name());
  auto isFloat = [](int type) {
    return type == onnx::TensorProto::FLOAT || type == onnx::TensorProto::DOUBLE ||
           type == onnx::TensorProto::FLOAT16 || type == onnx::TensorProto::BFLOAT16;
  };
  // Both anonymous (folded copies, onnx::MatMul_N) and read by one module
  // called twice (ALBERT's shared layer): one parameter, kept merged.
  // Decided on the whole graph, before the loop below moves nodes out.
  std::set<std::string> calledAgain;
  llvm::StringMap<std::string> modules = readerModules(g);
  // One value repeated, so equal by chance: float32 and float64 values (a
  // 16-bit copy is taken for a tie, as before).
  auto coincident = [&](const std::string &name) {
    auto it = initializer.find(name);
    if (it == initializer.end())
      return false;
    const onnx::TensorProto &t = g.initializer(it->second);
    std::string_view v = valuesOf(t, bytes);
    return !v.empty() && repeated(v, t.data_type() == onnx::TensorProto::DOUBLE ? 8 : 4);
  };
  for (const auto &n : g.node()) {
    if (n.op_type() != "Identity" || n.input_size() != 1 || n.output_size() != 1 ||
        !llvm::StringRef(n.input(0)).starts_with("onnx::") ||
        !llvm::StringRef(n.output(0)).starts_with("onnx::"))
      continue;
    std::string a = modules.lookup(n.input(0)), b = modules.lookup(n.output(0));
    if (sameModuleCalledAgain(a, b) && (a != b || !coincident(n.input(0))))
      calledAgain.insert(n.output(0));
  }
  std::vector<std::pair<std::string, std::string>> untied;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (auto &n : *g.mutable_node()) {
    auto it = n.op_type() == "Identity" && n.domain().empty() && n.input_size() == 1 &&
                      n.output_size() == 1 && !outputs.count(n.output(0)) &&
                      !initializer.count(n.output(0))
                  ? initializer.find(n.input(0))
                  : initializer.end();
    if (it == initializer.end() || !isFloat(g.initializer(it->second).data_type()) ||
        (keep && keep->contains(n.input(0))) ||
        (parameters && !parameters->contains(n.output(0))) ||
        (n.output_size() == 1 && calledAgain.count(n.output(0)))) {
      *nodes.Add() = std::move(n);
      continue;
    }
    onnx::TensorProto copy = g.initializer(it->second);
    copy.set_name(n.output(0));
    initializer.emplace(copy.name(), g.initializer_size());
    *g.add_initializer() = std::move(copy);
    untied.emplace_back(n.output(0), n.input(0));
  }
  g.mutable_node()->Swap(&nodes);
  return untied;
}

std::string tieAsAsked(onnx::ModelProto &model,
                       const std::vector<std::pair<std::string, std::string>> &ties,
                       TensorBytes &bytes) {
  onnx::GraphProto &g = *model.mutable_graph();
  std::map<std::string, const onnx::TensorProto *> byName;
  for (const auto &t : g.initializer())
    byName.emplace(t.name(), &t);
  std::map<std::string, std::string> equalTo, transposeOf;
  for (const auto &[keep, copy] : ties) {
    std::string tie = "--tie " + keep + "=" + copy + ": ";
    for (const std::string &name : {keep, copy})
      if (!byName.count(name) || valuesOf(*byName[name], bytes).empty())
        return tie + "'" + name + "' is not a float initializer of the model";
    if (keep == copy)
      return tie + "a tensor cannot be tied to itself";
    if (equalTo.count(copy) || transposeOf.count(copy))
      return tie + "'" + copy + "' is tied twice";
    const onnx::TensorProto &a = *byName[keep], &b = *byName[copy];
    bool sameShape = a.data_type() == b.data_type() &&
                     std::equal(a.dims().begin(), a.dims().end(), b.dims().begin(), b.dims().end());
    if (sameShape && valuesOf(a, bytes) == valuesOf(b, bytes)) {
      equalTo[copy] = keep;
      continue;
    }
    bool matrices = a.data_type() == onnx::TensorProto::FLOAT &&
                    b.data_type() == onnx::TensorProto::FLOAT && a.dims_size() == 2 &&
                    b.dims_size() == 2;
    if (matrices && isTransposeOf(Matrix{&b, b.dims(0), b.dims(1), floatsOf(b, bytes), 0},
                                  Matrix{&a, a.dims(0), a.dims(1), floatsOf(a, bytes), 0})) {
      transposeOf[copy] = keep;
      continue;
    }
    return tie + "'" + copy + "' holds neither the values of '" + keep +
           "' nor their transpose, so the two cannot start as one tensor";
  }
  for (const auto &[keep, copy] : ties)
    if (equalTo.count(keep) || transposeOf.count(keep))
      return "--tie " + keep + "=" + copy + ": '" + keep + "' is itself tied to another; tie to that one";
  replaceByNodes(g, equalTo, false);
  replaceByNodes(g, transposeOf, true);
  return "";
}

std::vector<std::pair<std::string, std::string>> equalInitializers(const onnx::ModelProto &model,
                                                                   TensorBytes &bytes) {
  // Only tensors that share a type and shape with another are read.
  const auto &inits = model.graph().initializer();
  std::map<std::pair<int, std::vector<int64_t>>, std::vector<int>> byShape;
  for (int i = 0; i < inits.size(); ++i)
    if (inits[i].dims_size() >= 2)
      byShape[{inits[i].data_type(), {inits[i].dims().begin(), inits[i].dims().end()}}].push_back(i);
  std::vector<std::pair<int, int>> found; // (first, later), in the order met
  for (const auto &[shape, members] : byShape) {
    if (members.size() < 2)
      continue;
    // By their first bytes, then whole: tensors that differ early (any two
    // trained or randomly initialised ones) are read no further.
    std::unordered_map<std::string_view, std::vector<std::pair<int, std::string_view>>> firsts;
    for (int i : members) {
      std::string_view v = valuesOf(inits[i], bytes);
      if (v.empty() || repeated(v, inits[i].data_type() == onnx::TensorProto::FLOAT ? 4 : 8))
        continue;
      auto &candidates = firsts[v.substr(0, 256)];
      auto same = std::find_if(candidates.begin(), candidates.end(),
                               [&](const auto &c) { return c.second == v; });
      if (same != candidates.end())
        found.emplace_back(same->first, i);
      else
        candidates.emplace_back(i, v);
    }
  }
  std::sort(found.begin(), found.end(), [](auto a, auto b) { return a.second < b.second; });
  std::vector<std::pair<std::string, std::string>> pairs;
  for (auto [first, later] : found)
    pairs.emplace_back(inits[first].name(), inits[later].name());
  return pairs;
}

} // namespace otc
