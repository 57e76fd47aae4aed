// Control flow known at compile time. Loop is unrolled at import: its trip
// count and condition must be known there (PyTorch exports repeat_interleave,
// as in GPT-J's rotary embedding, as a Loop over a tensor's size). Each
// iteration imports a copy of the body whose every name carries the
// iteration's suffix, its inputs bound to the iteration number, true and the
// carried values. If imports the branch its compile-time condition picks.
// Nothing of either exists at run time.
#include "Importers.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace otc {

namespace {

/// Every name a graph defines, its nested graphs' included.
void definedNames(const onnx::GraphProto &g, llvm::StringSet<> &out) {
  for (const auto &in : g.input())
    out.insert(in.name());
  for (const auto &n : g.node()) {
    for (const auto &o : n.output())
      if (!o.empty())
        out.insert(o);
    forEachSubgraph(n, [&](const onnx::GraphProto &sub) { definedNames(sub, out); });
  }
}

/// Appends `suffix` to every occurrence of a name of `defined`: the body's
/// own values get fresh names, and the outer values it reads keep theirs.
void rename(onnx::GraphProto &g, const llvm::StringSet<> &defined, const std::string &suffix) {
  auto fix = [&](std::string *name) {
    if (!name->empty() && defined.contains(*name))
      name->append(suffix);
  };
  for (auto &in : *g.mutable_input())
    fix(in.mutable_name());
  for (auto &out : *g.mutable_output())
    fix(out.mutable_name());
  for (auto &n : *g.mutable_node()) {
    for (auto &in : *n.mutable_input())
      fix(&in);
    for (auto &out : *n.mutable_output())
      fix(&out);
    for (auto &a : *n.mutable_attribute()) {
      if (a.has_g())
        rename(*a.mutable_g(), defined, suffix);
      for (auto &sub : *a.mutable_graphs())
        rename(sub, defined, suffix);
    }
  }
}

/// An Identity node under `n`'s name defining `output`.
onnx::NodeProto identityDefining(const onnx::NodeProto &n, const std::string &output) {
  onnx::NodeProto m = madeNode(n, "Identity");
  m.add_output(output);
  return m;
}

/// Defines `name` as a scalar known at compile time.
LogicalResult bindScalar(GraphImporter &imp, const std::string &name, int elemType, double v) {
  onnx::NodeProto m = identityDefining(imp.node(), name);
  HostTensor t;
  t.elemType = elemType;
  t.values = {v};
  return imp.withNode(m, [&] { return imp.define(0, std::move(t)); });
}

/// The boolean scalar value `name` holds, when known at compile time;
/// else fails with `why`.
FailureOr<bool> knownCondition(GraphImporter &imp, const std::string &name,
                               const std::string &why) {
  onnx::NodeProto m = identityDefining(imp.node(), name + "/otc_probe");
  m.add_input(name);
  bool out = false;
  if (failed(imp.withNode(m, [&] {
        const HostTensor *c = imp.constantInput(0);
        if (!c || c->numElements() != 1)
          return failure();
        out = c->values[0] != 0;
        return success();
      })))
    return imp.fail(why);
  return out;
}

std::string loopCondition(const std::string &name) {
  return "the loop's condition '" + name +
         "' must be a compile-time constant scalar to unroll the loop";
}

} // namespace

LogicalResult importLoop(GraphImporter &imp) {
  const onnx::NodeProto &n = imp.node();
  const onnx::AttributeProto *bodyAttr = imp.attr("body");
  if (!bodyAttr || !bodyAttr->has_g())
    return imp.fail("the body graph is missing");
  const onnx::GraphProto &body = bodyAttr->g();
  int carried = n.input_size() - 2;
  if (carried < 0)
    return imp.fail("a Loop takes a trip count and a condition (either may be empty)");
  if (body.input_size() != carried + 2 || body.output_size() < carried + 1)
    return imp.fail("the body takes " + std::to_string(body.input_size()) + " inputs and gives " +
                    std::to_string(body.output_size()) + " outputs; for " +
                    std::to_string(carried) + " carried values it must take " +
                    std::to_string(carried + 2) + " and give at least " +
                    std::to_string(carried + 1));
  int scans = body.output_size() - 1 - carried;
  if (n.output_size() > carried + scans)
    return imp.fail("the node has " + std::to_string(n.output_size()) + " outputs, more than its " +
                    std::to_string(carried) + " carried values and " + std::to_string(scans) +
                    " scan outputs");
  if (body.initializer_size() > 0)
    return imp.fail("the body has initializers; otc takes its constants as Constant nodes");
  for (int k = 0; k < carried; ++k)
    if (n.input(2 + k).empty())
      return imp.fail("carried value " + std::to_string(k) + " has no initial value");

  std::optional<int64_t> trips;
  if (!n.input(0).empty()) {
    const HostTensor *m = imp.constantInput(0);
    if (!m || m->numElements() != 1)
      return imp.fail("the trip count must be a compile-time constant scalar to unroll the loop");
    trips = std::max<int64_t>(0, m->asInts()[0]);
  }
  bool go = true;
  if (!n.input(1).empty()) {
    auto c = knownCondition(imp, n.input(1), loopCondition(n.input(1)));
    if (failed(c))
      return failure();
    go = *c;
  }

  // The work of an iteration: its nodes (nested ones too), and the KiB of
  // the body it copies. A known trip count is charged before the first
  // (10^12 iterations fail here, not after hours), and what a condition
  // ends early is given back; the carried constants are charged as copied.
  llvm::StringSet<> defined;
  definedNames(body, defined);
  int64_t perIteration = 1 + int64_t(defined.size()) + int64_t(body.ByteSizeLong() >> 10);
  int64_t charged = 0;
  if (trips && go) {
    charged = *trips > GraphImporter::kMaxUnrolledWork ? GraphImporter::kMaxUnrolledWork + 1
                                                       : *trips * perIteration;
    if (failed(imp.chargeUnrolled(charged)))
      return failure();
  }
  std::vector<std::string> state(n.input().begin() + 2, n.input().end());
  std::vector<std::vector<std::string>> scanned(scans);
  int64_t done = 0;
  for (; go && (!trips || done < *trips); ++done) {
    int64_t carriedKiB = 0;
    for (const std::string &v : state)
      carriedKiB += imp.hostElements(v) >> 7; // 8-byte values
    if (failed(imp.chargeUnrolled((trips ? 0 : perIteration) + carriedKiB)))
      return failure();
    // A suffix that makes no name of the model's, reserved at once so that
    // names made while this iteration imports avoid its names too.
    std::string suffix = "/otc_iter" + std::to_string(done);
    while (llvm::any_of(defined, [&](const auto &d) { return imp.isDefined(d.getKey().str() + suffix); }))
      suffix += "_";
    for (const auto &d : defined)
      imp.reserveName(d.getKey().str() + suffix);
    onnx::GraphProto copy = body;
    rename(copy, defined, suffix);
    using P = onnx::TensorProto;
    if (failed(bindScalar(imp, copy.input(0).name(), P::INT64, double(done))) ||
        failed(bindScalar(imp, copy.input(1).name(), P::BOOL, 1)))
      return failure();
    for (int k = 0; k < carried; ++k)
      if (failed(bindAs(imp, copy.input(2 + k).name(), state[k])))
        return failure();
    for (const auto &node : copy.node())
      if (failed(imp.importNested(node))) {
        imp.addErrorContext(" (iteration " + std::to_string(done) + " of the body of " +
                            describeNode(n) + ")");
        return failure();
      }
    for (const auto &out : copy.output())
      if (!imp.hasValue(out.name()) || failed(imp.decodePending(out.name())))
        return imp.fail("the body's output '" + out.name() + "' is not computed by the body");
    auto c = knownCondition(imp, copy.output(0).name(), loopCondition(copy.output(0).name()));
    if (failed(c))
      return failure();
    go = *c;
    llvm::StringSet<> kept;
    for (int k = 0; k < carried; ++k)
      kept.insert(state[k] = copy.output(1 + k).name());
    for (int k = 0; k < scans; ++k) {
      scanned[k].push_back(copy.output(1 + carried + k).name());
      kept.insert(scanned[k].back());
    }
    // The iteration's other values are read no more (carried values are
    // bound by copy): their compile-time values go.
    for (const auto &d : defined)
      if (!kept.contains(d.getKey().str() + suffix))
        imp.releaseHost(d.getKey().str() + suffix);
  }
  if (trips && charged > done * perIteration)
    imp.refundUnrolled(charged - done * perIteration);

  for (int k = 0; k < carried && k < n.output_size(); ++k)
    if (!n.output(k).empty())
      imp.defineAs(k, state[k]);
  for (int k = 0; carried + k < n.output_size(); ++k) {
    const std::string &out = n.output(carried + k);
    if (out.empty())
      continue;
    if (scanned[k].empty())
      return imp.fail("scan output '" + out + "' has no iterations to take its shape from");
    if (failed(stackParts(imp, scanned[k], 0, out)))
      return failure();
  }
  return success();
}

LogicalResult importIf(GraphImporter &imp) {
  const onnx::NodeProto &n = imp.node();
  const onnx::AttributeProto *thenAttr = imp.attr("then_branch"),
                             *elseAttr = imp.attr("else_branch");
  if (!thenAttr || !thenAttr->has_g() || !elseAttr || !elseAttr->has_g())
    return imp.fail("a branch graph is missing");
  if (n.input_size() < 1 || n.input(0).empty())
    return imp.fail("the condition input is missing");
  auto c = knownCondition(imp, n.input(0), "the condition '" + n.input(0) +
                                               "' must be a compile-time constant scalar to "
                                               "pick the branch");
  if (failed(c))
    return failure();
  const onnx::GraphProto &branch = *c ? thenAttr->g() : elseAttr->g();
  if (branch.input_size() > 0 || branch.initializer_size() > 0)
    return imp.fail("a branch with inputs or initializers is not supported");
  if (branch.output_size() < n.output_size())
    return imp.fail("the " + std::string(*c ? "then" : "else") + " branch gives " +
                    std::to_string(branch.output_size()) + " outputs for the node's " +
                    std::to_string(n.output_size()));
  // (Its names are the model's own, unique; in a Loop's body, renamed.)
  if (failed(imp.chargeUnrolled(1 + branch.node_size())))
    return failure();
  for (const auto &node : branch.node())
    if (failed(imp.importNested(node))) {
      imp.addErrorContext(std::string(" (the ") + (*c ? "then" : "else") + " branch of " +
                          describeNode(n) + ")");
      return failure();
    }
  for (int k = 0; k < n.output_size(); ++k) {
    const std::string &out = branch.output(k).name();
    if (!imp.hasValue(out) || failed(imp.decodePending(out)))
      return imp.fail("the branch's output '" + out + "' is not computed by the branch");
    if (!n.output(k).empty())
      imp.defineAs(k, out);
  }
  return success();
}

} // namespace otc
