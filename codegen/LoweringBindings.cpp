// The lowering's bindings: arguments to inputs, parameters and gradient
// buffers; results to the loss, the plain function's results, and gradient
// accumulation where each gradient is made.
#include "Lowering.h"
#include "Rules.h"
#include "otc/runtime/abi.h"

#include "otc/Dialect/OtcDialect.h"
#include "otc/Passes/Passes.h"

#include <map>

using namespace mlir;

namespace otc {

namespace {
/// A mean cross-entropy's operands: of softmax_cross_entropy, or of the
/// loss of softmax_cross_entropy_with_grad (otc-fuse-cross-entropy's).
struct CrossEntropy {
  Value logits, labels;
  IntegerAttr ignore;
};
std::optional<CrossEntropy> crossEntropyOf(Operation *op) {
  if (auto ce = dyn_cast_or_null<SoftmaxCrossEntropyOp>(op))
    return CrossEntropy{ce.getLogits(), ce.getLabels(), ce.getIgnoreIndexAttr()};
  if (auto ce = dyn_cast_or_null<SoftmaxCrossEntropyWithGradOp>(op))
    return CrossEntropy{ce.getLogits(), ce.getLabels(), ce.getIgnoreIndexAttr()};
  return std::nullopt;
}
} // namespace

/// `desc` with the range its values must lie in when `arg` holds class
/// labels or gather indices (which the runtime checks before a step reads
/// memory through them).
static TensorDesc indexRange(BlockArgument arg, TensorDesc desc) {
  auto func = cast<func::FuncOp>(arg.getOwner()->getParentOp());
  if (auto classes = func.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), attr::kClasses)) {
    desc.numClasses = classes.getInt();
    auto ignore = func.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), attr::kIgnoreIndex);
    desc.hasIgnoreIndex = bool(ignore);
    desc.ignoreIndex = ignore ? ignore.getInt() : 0;
  }
  // Users, through reshapes (N x C x d labels are flattened).
  std::vector<Operation *> users(arg.getUsers().begin(), arg.getUsers().end());
  for (size_t u = 0; u < users.size(); ++u)
    if (auto r = dyn_cast<ReshapeOp>(users[u]))
      users.insert(users.end(), r->getUsers().begin(), r->getUsers().end());
  for (Operation *user : users) {
    // Indices of a gather: within [-n, n) of the gathered dim.
    if (auto g = dyn_cast<GatherOp>(user); g && viewBase(g.getIndices()) == arg) {
      int64_t n = shapeOf(g.getData())[g.getAxis()];
      desc.numClasses = desc.numClasses ? std::min(desc.numClasses, n) : n;
      desc.negativeIndices = !desc.hasIgnoreIndex;
    }
    if (auto ce = crossEntropyOf(user)) {
      if (viewBase(ce->labels) != arg)
        continue;
      desc.numClasses = shapeOf(ce->logits)[1];
      desc.hasIgnoreIndex = bool(ce->ignore);
      if (desc.hasIgnoreIndex)
        desc.ignoreIndex = ce->ignore.getInt();
      desc.negativeIndices = false;
    }
  }
  return desc;
}

bool Lowering::bindArguments() {
  std::map<int64_t, size_t> paramOfArg; // argument index: parameter index
  llvm::DenseSet<Value> written;         // parameters the step assigns
  func.walk([&](AssignOp a) { written.insert(viewBase(a.getTarget())); });
  for (BlockArgument arg : func.getArguments()) {
    unsigned i = arg.getArgNumber();
    ElemType type = ElemType::F32;
    bool tensor = elemTypeOf(arg.getType(), type);
    auto named = [&](StringRef attr) { return func.getArgAttrOfType<StringAttr>(i, attr); };
    if (!training) {
      if (!tensor)
        return fail(func, "argument " + std::to_string(i) + " has type " +
                              typeText(arg.getType()) + ", which is not supported");
      // Forward-only executables name their arguments: data inputs by file,
      // parameters from the embedded model.
      TensorDesc desc = indexRange(arg, {"arg" + std::to_string(i), type, shapeOf(arg).vec()});
      if (auto name = named(attr::kInput))
        desc.name = name.str(), desc.role = OTC_ARG_INPUT;
      else if (auto name = named(attr::kParam))
        desc.name = name.str(), desc.role = OTC_ARG_PARAM;
      prog->arguments.push_back(desc);
      buffers[arg] = addBuffer(type, shapeOf(arg).vec(), Buffer::Place::Argument, i,
                               "arg" + std::to_string(i));
    } else if (auto name = named(attr::kInput)) {
      if (type != ElemType::F32 && type != ElemType::I64 && type != ElemType::I1)
        return fail(func, "input '" + name.str() + "' must be float32, int64 or bool");
      TensorDesc desc = indexRange(arg, {name.str(), type, shapeOf(arg).vec()});
      buffers[arg] = addBuffer(type, desc.shape, Buffer::Place::Input,
                               prog->inputs.size(), name.str());
      prog->inputs.push_back(desc);
    } else if (auto name = named(attr::kParam)) {
      if (type != ElemType::F32)
        return fail(func, "parameter '" + name.str() + "' must be float32");
      paramOfArg[i] = prog->params.size();
      buffers[arg] = addBuffer(type, shapeOf(arg).vec(), Buffer::Place::Param,
                               prog->params.size(), name.str());
      prog->params.push_back({name.str(), type, shapeOf(arg).vec()});
      prog->params.back().assigned = written.contains(arg);
      if (auto init = func.getArgAttrOfType<StringAttr>(i, attr::kLoraInit))
        prog->params.back().init = init.getValue() == "zeros" ? OTC_INIT_ZEROS : OTC_INIT_KAIMING_UNIFORM;
      prog->gradIndex.push_back(-1);
    } else if (auto of = func.getArgAttrOfType<IntegerAttr>(i, attr::kGradBuffer)) {
      // Bound to its parameter by the parameter's argument index.
      auto p = paramOfArg.find(of.getInt());
      if (p == paramOfArg.end())
        return fail(func, "gradient buffer " + std::to_string(i) + " names argument " +
                              std::to_string(of.getInt()) + ", which is not a parameter");
      prog->gradIndex[p->second] = prog->numGrads;
      buffers[arg] = addBuffer(type, shapeOf(arg).vec(), Buffer::Place::Grad,
                               prog->numGrads++, prog->params[p->second].name);
    } // the seed and the first-micro-batch flag are scalars, read in place
  }
  // LoRA adapters: A and B by their base's name (otc-insert-lora).
  auto indexOf = [&](StringRef name) {
    for (size_t p = 0; p < prog->params.size(); ++p)
      if (prog->params[p].name == name)
        return int(p);
    return -1;
  };
  for (BlockArgument arg : func.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto base = func.getArgAttrOfType<StringAttr>(i, attr::kLoraBase);
    auto name = func.getArgAttrOfType<StringAttr>(i, attr::kParam);
    if (!training || !base || !name || !name.getValue().ends_with(".lora_A"))
      continue;
    LoraAdapter l;
    l.base = indexOf(base.getValue());
    l.a = indexOf(name.getValue());
    l.b = indexOf((base.getValue() + ".lora_B").str());
    if (auto s = func.getArgAttrOfType<FloatAttr>(i, attr::kLoraScale))
      l.scale = s.getValueAsDouble();
    if (auto t = func.getArgAttrOfType<BoolAttr>(i, attr::kLoraTransposed))
      l.transposed = t.getValue();
    if (l.base < 0 || l.b < 0)
      return fail(func, "LoRA adapter '" + name.str() + "' has no base or B parameter");
    prog->lora.push_back(l);
  }
  return true;
}

// Where results go. A value written by a step of its own (not a view, a
// constant or an argument) can be stored there directly.
bool Lowering::storable(Value v) const {
  const RuleRegistry &rules = RuleRegistry::get();
  Operation *p = v.getDefiningOp();
  if (!p || !v.hasOneUse())
    return false;
  const StepRule *s = rules.stepRule(p);
  return rules.elementwiseRule(p) ? !s : s && s->output == StepRule::Output::Store;
}

// Written straight into a result by a rule that takes its own buffer.
bool Lowering::owned(Value v) const {
  Operation *p = v.getDefiningOp();
  const StepRule *s = p && v.hasOneUse() ? RuleRegistry::get().stepRule(p) : nullptr;
  return s && s->output == StepRule::Output::Own;
}

bool Lowering::bindResults() {
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  if (!training) {
    for (auto [r, v] : llvm::enumerate(ret.getOperands())) {
      ElemType type;
      if (!elemTypeOf(v.getType(), type))
        return fail(ret, "result " + std::to_string(r) + " is not a supported tensor");
      auto output = func.getResultAttrOfType<StringAttr>(r, attr::kOutput);
      prog->results.push_back({output ? output.str() : "result" + std::to_string(r), type,
                               shapeOf(v).vec()});
      int b = addBuffer(type, shapeOf(v).vec(), Buffer::Place::Result, r,
                        "result" + std::to_string(r));
      if (storable(v) || owned(v))
        targets[v] = {b, false};
      resultBuffers.push_back(b);
    }
    return true;
  }

  for (unsigned r = 0; r < func.getNumResults(); ++r) {
    Value v = ret.getOperand(r);
    if (func.getResultAttr(r, attr::kLoss))
      loss = v;
    else if (!v.getDefiningOp<AccumulateOp>())
      return fail(ret, "result " + std::to_string(r) + " is neither the loss nor an "
                       "accumulated gradient; run the training pipeline first");
  }
  if (!loss)
    return fail(ret, "no result is marked as the loss");
  tokenLabels(loss);
  lossBuffer = addBuffer(ElemType::F32, {}, Buffer::Place::Loss, 0, "loss");
  if (storable(loss))
    targets[loss] = {lossBuffer, true};

  return fuseAccumulations();
}

// A loss that is a mean cross-entropy over the labels not equal to an
// ignore_index, of a data input: its count varies by micro-batch, so the
// runtime weights micro-batches by it (otc_program.token_labels).
void Lowering::tokenLabels(Value loss) {
  while (Operation *def = loss.getDefiningOp()) {
    if (!isa<ReshapeOp, CastOp>(def))
      break;
    loss = def->getOperand(0);
  }
  auto ce = crossEntropyOf(loss.getDefiningOp());
  if (!ce || !ce->ignore || cast<OpResult>(loss).getResultNumber() != 0)
    return;
  auto arg = dyn_cast<BlockArgument>(viewBase(ce->labels));
  auto name = arg ? func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), attr::kInput) : nullptr;
  for (size_t i = 0; name && i < prog->inputs.size(); ++i)
    if (prog->inputs[i].name == name.getValue())
      prog->tokenLabels = int(i);
}

// A gradient accumulates where it is made: a GEMM through its beta, any
// other step through its store; the accumulate op itself is then empty.
bool Lowering::fuseAccumulations() {
  const RuleRegistry &rules = RuleRegistry::get();
  for (Operation &op : func.getBody().front().without_terminator()) {
    auto acc = dyn_cast<AccumulateOp>(op);
    if (!acc)
      continue;
    int accBuffer = buffer(acc.getAcc(), acc);
    if (accBuffer < 0)
      return false;
    buffers[acc.getResult()] = accBuffer;
    // Through reshapes (views in the same element order) to the producer.
    auto throughViews = [](Value g) {
      while (g.hasOneUse() && g.getDefiningOp<ReshapeOp>())
        g = g.getDefiningOp<ReshapeOp>().getInput();
      return g;
    };
    // Whether the producer of `g` can accumulate it into the buffer itself.
    auto fuse = [&](Value g) {
      Operation *p = g.getDefiningOp();
      if (!p || !g.hasOneUse() || inlined.contains(g))
        return false;
      const StepRule *rule = rules.stepRule(p);
      // Only a step's first result: the one its GEMM or kernel writes
      // with the first-micro-batch flag (a bias gradient beside it is not).
      if (owned(g) && rule->accumulates && rule->accumulates(p) &&
          cast<OpResult>(g).getResultNumber() == 0)
        nativeAccumulator[p] = accBuffer;
      else if (storable(g))
        targets[g] = {accBuffer, true};
      else
        return false;
      fusedAccumulates[acc] = g;
      return true;
    };
    Value g = throughViews(acc.getGrad());
    // Or through a widening cast of a 16-bit gradient (a low-precision
    // GEMM's or reduction's): its producer sums in float32 anyway, so it
    // writes the float32 buffer and the gradient never rounds to 16 bits.
    // The cast then has no step of its own.
    if (auto c = g.getDefiningOp<CastOp>(); c && g.hasOneUse()) {
      Value in = throughViews(c.getInput());
      Type from = cast<RankedTensorType>(in.getType()).getElementType();
      if (isHalf(from) && fuse(in)) {
        inlined.insert(c.getResult());
        continue;
      }
    }
    fuse(g);
  }
  return true;
}

} // namespace otc
