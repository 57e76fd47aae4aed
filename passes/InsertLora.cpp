// otc-insert-lora: LoRA adapters inserted by the compiler. Each matched
// product x·W (W a parameter, or the transpose of one as PyTorch's Linear
// exports) becomes x·W + ((x·Aᵀ)·Bᵀ)·(alpha/rank), with new trained
// parameters A [rank, in] and B [out, rank] (initialised by the runtime:
// Kaiming-uniform and zero, as PEFT does), and every other parameter is
// frozen, as PEFT freezes the base: no gradient, no optimizer state, no
// backward work that only they need.
#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"
#include "otc/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Regex.h"

namespace otc {
#define GEN_PASS_DEF_INSERTLORA
#include "otc/Passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

struct InsertLora : otc::impl::InsertLoraBase<InsertLora> {
  using InsertLoraBase::InsertLoraBase;

  void runOnOperation() override {
    if (rank <= 0)
      return;
    if (!(dropout >= 0 && dropout < 1)) {
      getOperation().emitError("--lora-dropout must lie in [0, 1), got " + std::to_string(dropout));
      return signalPassFailure();
    }
    auto func = getOperation().lookupSymbol<func::FuncOp>("train_step");
    if (!func)
      return;
    llvm::Regex match(targets);
    std::string why;
    if (!match.isValid(why)) {
      func.emitError("--lora-targets: bad regex '" + targets + "': " + why);
      return signalPassFailure();
    }
    // The products to adapt, found first: the rewrite adds matmuls.
    struct Site {
      MatMulOp op;
      BlockArgument weight;
      bool transposed; // the product reads Wᵀ (W stored [out, in])
    };
    SmallVector<Site> sites;
    func.walk([&](MatMulOp op) {
      Value rhs = op.getRhs();
      bool transposed = false;
      if (auto t = rhs.getDefiningOp<TransposeOp>();
          t && t.getPerm() == ArrayRef<int64_t>{1, 0}) {
        rhs = t.getInput();
        transposed = true;
      }
      auto arg = dyn_cast<BlockArgument>(rhs);
      auto name = arg ? func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), attr::kParam) : nullptr;
      if (name && cast<RankedTensorType>(arg.getType()).getRank() == 2 &&
          func.getArgAttr(arg.getArgNumber(), attr::kTrainable) && match.match(name.getValue()))
        sites.push_back({op, arg, transposed});
    });
    if (sites.empty()) {
      func.emitError("--lora-targets '" + targets + "' matches no trained weight of a matrix product");
      return signalPassFailure();
    }
    OpBuilder b(func.getContext());
    llvm::DenseMap<BlockArgument, std::pair<Value, Value>> adapters; // W: (A, B), shared by its uses
    llvm::DenseMap<BlockArgument, int> uses; // dropout streams drawn per W
    for (Site &s : sites) {
      auto wType = cast<RankedTensorType>(s.weight.getType());
      Type elem = wType.getElementType();
      int64_t in = wType.getShape()[s.transposed ? 1 : 0], out = wType.getShape()[s.transposed ? 0 : 1];
      auto &[a, bv] = adapters[s.weight];
      if (!a) {
        std::string name =
            func.getArgAttrOfType<StringAttr>(s.weight.getArgNumber(), attr::kParam).str();
        auto add = [&](const std::string &suffix, ArrayRef<int64_t> shape, StringRef init) {
          unsigned i = func.getNumArguments();
          NamedAttrList attrs;
          attrs.append(attr::kParam, b.getStringAttr(name + suffix));
          attrs.append(attr::kTrainable, b.getUnitAttr());
          attrs.append(attr::kLoraInit, b.getStringAttr(init));
          attrs.append(attr::kLoraBase, b.getStringAttr(name));
          attrs.append(attr::kLoraScale, b.getF64FloatAttr(alpha / double(rank)));
          attrs.append(attr::kLoraTransposed, b.getBoolAttr(s.transposed));
          (void)func.insertArgument(i, RankedTensorType::get(shape, elem),
                                    attrs.getDictionary(func.getContext()), func.getLoc());
          return func.getArgument(i);
        };
        a = add(".lora_A", {rank, in}, "kaiming_uniform");
        bv = add(".lora_B", {out, rank}, "zeros");
      }
      b.setInsertionPointAfter(s.op);
      Location loc = s.op.getLoc();
      Value x = s.op.getLhs(), y = s.op.getResult();
      auto shapeOf = [](Value v) { return cast<RankedTensorType>(v.getType()).getShape(); };
      auto transposeOf = [&](Value m) {
        auto sh = shapeOf(m);
        return TransposeOp::create(b, loc, RankedTensorType::get({sh[1], sh[0]}, elem), m,
                                   b.getDenseI64ArrayAttr({1, 0}));
      };
      if (dropout > 0) {
        // PEFT's lora_dropout: on the adapter's input only, a stream per
        // weight and use.
        std::string key = func.getArgAttrOfType<StringAttr>(s.weight.getArgNumber(), attr::kParam).str() +
                          ".lora_dropout" + (uses[s.weight] ? "." + std::to_string(uses[s.weight]) : "");
        ++uses[s.weight];
        x = createDropout(b, loc, x, dropout, key).getOutput();
      }
      SmallVector<int64_t> mid(shapeOf(x));
      mid.back() = rank;
      Value xa = MatMulOp::create(b, loc, RankedTensorType::get(mid, elem), x, transposeOf(a));
      Value xab = MatMulOp::create(b, loc, y.getType(), xa, transposeOf(bv));
      Value scaled = MulOp::create(b, loc, y.getType(), xab,
                                   scalarConstant(b, loc, elem, alpha / double(rank)));
      auto sum = AddOp::create(b, loc, y.getType(), y, scaled);
      y.replaceAllUsesExcept(sum.getResult(), sum);
      (void)out;
    }
    // The whole base is frozen, as PEFT freezes it: only adapters train.
    for (BlockArgument arg : func.getArguments())
      if (!func.getArgAttr(arg.getArgNumber(), attr::kLoraInit))
        func.removeArgAttr(arg.getArgNumber(), attr::kTrainable);
  }
};

} // namespace
