// Lowering driver: classification, buffer binding and per-op kernels.
#include "Lowering.h"
#include "otc/runtime/limits.h"

#include "otc/Dialect/OtcDialect.h"
#include "otc/Passes/Passes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace otc {
namespace {

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}
int64_t countOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getNumElements();
}
std::string str(int64_t v) { return std::to_string(v); }

/// Whether `user` evaluates its operands element by element in a loop, so an
/// operand's producer can be computed inline.
bool consumesInLoop(Operation *user, Value v) {
  if (isElementwise(user) || isa<ReduceSumOp, ReduceMeanOp, AccumulateOp>(user))
    return true;
  if (auto g = dyn_cast<GemmOp>(user))
    return v == g.getC() && v != g.getA() && v != g.getB();
  return false;
}

} // namespace

bool Lowering::classify() {
  int64_t i = 0;
  for (Operation &op : func.getBody().front())
    position[&op] = i++;

  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (unsigned r = 0; r < func.getNumResults(); ++r) {
    if (func.getResultAttr(r, attr::kLoss))
      loss = ret.getOperand(r);
    else if (!ret.getOperand(r).getDefiningOp<AccumulateOp>())
      return fail(ret, "result " + str(r) + " is neither the loss nor an "
                       "accumulated gradient; run the training pipeline first");
  }
  if (!loss)
    return fail(ret, "no result is marked as the loss");

  for (Operation &op : func.getBody().front().without_terminator()) {
    for (Type t : op.getResultTypes()) {
      auto tt = dyn_cast<RankedTensorType>(t);
      if (!tt || !tt.getElementType().isF32())
        return fail(&op, "only float32 tensors are supported, got " +
                             [&] { std::string s; llvm::raw_string_ostream os(s); os << t; return s; }());
    }
    if (auto c = dyn_cast<ConstantOp>(op))
      if (!cast<DenseElementsAttr>(c.getValue()).isSplat())
        return fail(&op, "non-uniform constant tensors are not supported yet");
    if (auto acc = dyn_cast<AccumulateOp>(op)) {
      Operation *producer = acc.getGrad().getDefiningOp();
      bool plainGemm = isa_and_nonnull<MatMulOp>(producer) ||
                       (isa_and_nonnull<GemmOp>(producer) && !cast<GemmOp>(producer).getC());
      if (plainGemm && acc.getGrad().hasOneUse())
        gemmsIntoAccumulator.insert(producer);
    }
    if (isElementwise(&op) && op.getResult(0).hasOneUse()) {
      Value v = op.getResult(0);
      if (consumesInLoop(*v.getUsers().begin(), v))
        inlined.insert(v);
    }
  }
  return true;
}

bool Lowering::bindArguments(Program &program) {
  for (BlockArgument arg : func.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    std::string field;
    if (auto name = func.getArgAttrOfType<StringAttr>(i, attr::kInput)) {
      bool isFloat = type.getElementType().isF32();
      if (!isFloat && !type.getElementType().isInteger(64))
        return fail(func, "input '" + name.str() + "' must be float32 or int64");
      field = "in" + str(program.inputs.size());
      TensorDesc desc{name.str(), isFloat, shapeOf(arg).vec()};
      for (Operation *user : arg.getUsers())
        if (auto sce = dyn_cast<SoftmaxCrossEntropyOp>(user)) {
          if (sce.getLabels() != arg)
            continue;
          desc.numClasses = shapeOf(sce.getLogits())[1];
          desc.hasIgnoreIndex = bool(sce.getIgnoreIndexAttr());
          if (desc.hasIgnoreIndex)
            desc.ignoreIndex = sce.getIgnoreIndexAttr().getInt();
        }
      program.inputs.push_back(desc);
      program.fields.push_back({field, isFloat ? "float *" : "const long long *"});
    } else if (auto name = func.getArgAttrOfType<StringAttr>(i, attr::kParam)) {
      if (!type.getElementType().isF32())
        return fail(func, "parameter '" + name.str() + "' must be float32");
      field = "p" + str(program.params.size());
      program.params.push_back({name.str(), true, shapeOf(arg).vec()});
      program.gradIndex.push_back(-1);
      program.fields.push_back({field, "float *"});
    } else if (auto name = func.getArgAttrOfType<StringAttr>(i, attr::kGradBuffer)) {
      field = "g" + str(program.numGrads);
      for (size_t p = 0; p < program.params.size(); ++p)
        if (program.params[p].name == name.str())
          program.gradIndex[p] = program.numGrads;
      ++program.numGrads;
      program.fields.push_back({field, "float *"});
    } else {
      continue; // the seed and the first-micro-batch flag are scalars
    }
    pointers[arg] = "P." + field;
  }
  return true;
}

int64_t Lowering::usePosition(Operation *op) {
  if (isa<func::ReturnOp>(op))
    return position[op];
  Value r = op->getResult(0);
  if (inlined.contains(r))
    return usePosition(*r.getUsers().begin());
  if (isa<ReshapeOp>(op) || gemmsIntoAccumulator.contains(op)) {
    int64_t last = position[op];
    for (Operation *u : r.getUsers())
      last = std::max(last, usePosition(u));
    return last;
  }
  return position[op];
}

bool Lowering::placeArena(Program &program) {
  std::vector<Interval> intervals;
  std::vector<Value> values;
  for (Operation &op : func.getBody().front().without_terminator()) {
    Value r = op.getResult(0);
    if (inlined.contains(r) || r == loss ||
        isa<ConstantOp, ReshapeOp, AccumulateOp>(op) || gemmsIntoAccumulator.contains(&op))
      continue;
    int64_t last = position[&op];
    for (Operation *u : r.getUsers())
      last = std::max(last, usePosition(u));
    intervals.push_back({countOf(r) * 4, position[&op], last});
    values.push_back(r);
  }
  program.arenaBytes = placeBuffers(intervals);
  if (program.arenaBytes > OTC_MAX_ARENA_BYTES) {
    error = "the step needs an arena of more than " + str(OTC_MAX_ARENA_BYTES) +
            " bytes, otc's limit for one micro-batch; lower --micro-batch";
    return false;
  }
  for (auto [v, iv] : llvm::zip(values, intervals))
    pointers[v] = "((float *)(P.arena + " + str(iv.offset) + "))";
  if (!loss.getDefiningOp<ReshapeOp>())
    pointers[loss] = "P.loss";
  return true;
}

bool Lowering::lowerOp(Operation *op, Program &program) {
  auto addLoop = [&](int64_t count, std::string body) {
    Step s{Step::Loop, op->getName().getStringRef().str(), {count, std::move(body)}, {}};
    program.steps.push_back(std::move(s));
  };
  auto addGemm = [&](GemmCall g) {
    Step s{Step::Gemm, op->getName().getStringRef().str(), {}, std::move(g)};
    program.steps.push_back(std::move(s));
  };
  // Views and inlined values have no kernel of their own.
  if (isa<ConstantOp>(op) || (op->getNumResults() && inlined.contains(op->getResult(0))))
    return true;
  if (isa<ReshapeOp>(op))
    return true;
  if (auto acc = dyn_cast<AccumulateOp>(op)) {
    pointers[acc.getResult()] = pointer(acc.getAcc());
    if (gemmsIntoAccumulator.contains(acc.getGrad().getDefiningOp()))
      return true;
  }

  Value out = op->getResult(0);
  auto accumulatorOf = [&](Operation *producer) -> AccumulateOp {
    if (!gemmsIntoAccumulator.contains(producer))
      return nullptr;
    return cast<AccumulateOp>(*producer->getResult(0).getUsers().begin());
  };

  return llvm::TypeSwitch<Operation *, bool>(op)
      .Case([&](GemmOp g) {
        auto a = shapeOf(g.getA()), b = shapeOf(g.getB());
        GemmCall call{g.getTransA(), g.getTransB(),
                      g.getTransA() ? a[1] : a[0], g.getTransB() ? b[0] : b[1],
                      g.getTransA() ? a[0] : a[1], 1, 0, 0, 0,
                      g.getAlpha().convertToDouble(), "0.0f",
                      pointer(g.getA()), pointer(g.getB()), ""};
        if (AccumulateOp acc = accumulatorOf(g)) {
          call.c = pointer(acc.getAcc());
          call.beta = "(P.first ? 0.0f : 1.0f)";
        } else if (Value c = g.getC()) {
          call.c = pointer(out);
          double beta = g.getBeta().convertToDouble();
          std::string idx = broadcastIndex("i", {call.m, call.n}, shapeOf(c));
          addLoop(countOf(out), call.c + "[i] = " + floatLiteral(beta) + " * " + load(c, idx) + ";");
          call.beta = "1.0f";
        } else {
          call.c = pointer(out);
        }
        addGemm(call);
        return true;
      })
      .Case([&](MatMulOp m) {
        auto a = shapeOf(m.getLhs()), b = shapeOf(m.getRhs());
        int64_t M = a[a.size() - 2], K = a.back(), N = b.back();
        int64_t batch = countOf(m.getLhs()) / (M * K);
        GemmCall call{false, false, M, N, K, batch, M * K, K * N, M * N, 1.0,
                      "0.0f", pointer(m.getLhs()), pointer(m.getRhs()), ""};
        if (b.size() == 2) { // one matrix shared by every leading index
          call.m = M * batch;
          call.batch = 1;
        }
        if (AccumulateOp acc = accumulatorOf(m)) {
          call.c = pointer(acc.getAcc());
          call.beta = "(P.first ? 0.0f : 1.0f)";
        } else {
          call.c = pointer(out);
        }
        addGemm(call);
        return true;
      })
      .Case<ReduceSumOp, ReduceMeanOp>([&](auto r) {
        auto in = shapeOf(r.getInput());
        auto axes = r.getAxes();
        std::vector<int64_t> inStrides = stridesOf(in);
        std::vector<int64_t> kept, reduced;
        for (int64_t d = 0; d < (int64_t)in.size(); ++d)
          (llvm::is_contained(axes, d) ? reduced : kept).push_back(in[d]);
        int64_t rcount = 1;
        for (int64_t d : reduced)
          rcount *= d;
        // The input index from the output index i and the reduced index r.
        std::string j;
        size_t ki = 0, ri = 0;
        std::vector<int64_t> keptStrides = stridesOf(kept), reducedStrides = stridesOf(reduced);
        for (int64_t d = 0; d < (int64_t)in.size(); ++d) {
          bool isReduced = llvm::is_contained(axes, d);
          const std::vector<int64_t> &dims = isReduced ? reduced : kept;
          size_t k = isReduced ? ri++ : ki++;
          std::string var = isReduced ? "r" : "i";
          int64_t stride = (isReduced ? reducedStrides : keptStrides)[k];
          std::string c = "((" + var + " / " + str(stride) + ") % " + str(dims[k]) + ")";
          j += (j.empty() ? "" : " + ") + c + " * " + str(inStrides[d]);
        }
        if (j.empty()) // a rank-0 input: one element
          j = "0";
        std::string scale = isa<ReduceMeanOp>(r.getOperation())
                                ? " * " + floatLiteral(1.0 / rcount) : "";
        addLoop(countOf(out),
                "float acc = 0.0f;\n"
                "for (long long r = 0; r < " + str(rcount) + "; ++r) {\n"
                "  long long j = " + j + ";\n"
                "  acc += " + load(r.getInput(), "j") + ";\n"
                "}\n" + pointer(out) + "[i] = acc" + scale + ";");
        return true;
      })
      .Case([&](SoftmaxCrossEntropyOp s) {
        auto shape = shapeOf(s.getLogits());
        std::string X = pointer(s.getLogits()), L = pointer(s.getLabels());
        std::string C = str(shape[1]);
        std::string skip = s.getIgnoreIndex()
                               ? "if (y == " + intLiteral(s.getIgnoreIndexAttr().getInt()) + ") continue;\n" : "";
        addLoop(1, "float total = 0.0f;\nlong long count = 0;\n"
                   "for (long long n = 0; n < " + str(shape[0]) + "; ++n) {\n"
                   "  long long y = " + L + "[n];\n  " + skip +
                   "  const float *x = " + X + " + n * " + C + ";\n"
                   "  float m = x[0];\n"
                   "  for (long long c = 1; c < " + C + "; ++c) m = fmaxf(m, x[c]);\n"
                   "  float s = 0.0f;\n"
                   "  for (long long c = 0; c < " + C + "; ++c) s += expf(x[c] - m);\n"
                   "  total += logf(s) + m - x[y];\n  ++count;\n}\n" +
                   pointer(out) + "[0] = total / (float)count;");
        return true;
      })
      .Case([&](SoftmaxCrossEntropyGradOp s) {
        auto shape = shapeOf(s.getLogits());
        std::string X = pointer(s.getLogits()), L = pointer(s.getLabels());
        std::string N = str(shape[0]), C = str(shape[1]);
        std::string ignored = s.getIgnoreIndex() ? intLiteral(s.getIgnoreIndexAttr().getInt()) : "";
        std::string counted = ignored.empty() ? "count = " + N + ";\n"
            : "for (long long k = 0; k < " + N + "; ++k) count += " + L + "[k] != " + ignored + ";\n";
        addLoop(shape[0],
                "long long count = 0;\n" + counted +
                "long long y = " + L + "[i];\n"
                "const float *x = " + X + " + i * " + C + ";\n"
                "float *dx = " + pointer(out) + " + i * " + C + ";\n"
                "float scale = " + load(s.getGrad(), "0") + " / (float)count;\n" +
                (ignored.empty() ? "" : "if (y == " + ignored + ") scale = 0.0f;\n") +
                "float m = x[0];\n"
                "for (long long c = 1; c < " + C + "; ++c) m = fmaxf(m, x[c]);\n"
                "float s = 0.0f;\n"
                "for (long long c = 0; c < " + C + "; ++c) s += expf(x[c] - m);\n"
                "for (long long c = 0; c < " + C + "; ++c)\n"
                "  dx[c] = scale * (expf(x[c] - m) / s - (c == y ? 1.0f : 0.0f));");
        return true;
      })
      .Default([&](Operation *o) {
        if (!isElementwise(o) && !isa<AccumulateOp>(o))
          return fail(o, "has no code generation rule");
        addLoop(countOf(out), pointer(out) + "[i] = " + expression(o, "i") + ";");
        return true;
      });
}

bool Lowering::run(Program &program) {
  if (!func.getBody().hasOneBlock())
    return fail(func, "expected a single block");
  if (!classify() || !bindArguments(program))
    return false;
  if (!placeArena(program))
    return false;
  for (Operation &op : func.getBody().front().without_terminator())
    if (!lowerOp(&op, program))
      return false;
  if (pointer(loss) != "P.loss")
    program.steps.push_back({Step::Loop, "loss", {1, "P.loss[0] = " + load(loss, "0") + ";"}, {}});
  return error.empty();
}

} // namespace otc
