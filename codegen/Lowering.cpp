// Lowers the training-step function to a kernel program. Elementwise
// producers with a single elementwise or reduction consumer are inlined into
// that consumer's loop (a fusion group); everything else gets a buffer.
#include "Lowering.h"

#include <cctype>
#include <cmath>

#include "otc/Dialect/OtcDialect.h"
#include "otc/Passes/Passes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/TypeSwitch.h"
#include <sstream>

using namespace mlir;

namespace otc {
std::vector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = (int)shape.size() - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

std::string cString(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '_' || c == '.' || c == '-' || c == '/' || c == ':') {
      out += char(c);
    } else { // three octal digits always end the escape
      out += '\\';
      out += char('0' + (c >> 6));
      out += char('0' + ((c >> 3) & 7));
      out += char('0' + (c & 7));
    }
  }
  return out + "\"";
}

std::string intLiteral(int64_t v) {
  // -9223372036854775808LL is a negated literal too large for long long.
  if (v == INT64_MIN)
    return "(-9223372036854775807LL - 1)";
  return std::to_string(v) + "LL";
}

namespace {

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

} // namespace

std::string floatLiteral(double v) {
  // math.h's macros: both host compilers and nvcc take them in device code.
  if (std::isnan(v))
    return "NAN";
  if (std::isinf(v) || std::fabs(v) > 3.4028234663852886e38)
    return v < 0 ? "(-INFINITY)" : "INFINITY";
  std::ostringstream os;
  os.precision(9);
  os << std::scientific << v << "f";
  return os.str();
}

namespace {

/// Coordinate `d` of linear index `idx` in `shape`.
std::string coord(const std::string &idx, ArrayRef<int64_t> shape, size_t d) {
  auto strides = stridesOf(shape);
  std::string s = "(" + idx + ")";
  if (strides[d] != 1)
    s = "(" + s + " / " + std::to_string(strides[d]) + ")";
  if (d != 0)
    s = "(" + s + " % " + std::to_string(shape[d]) + ")";
  return s;
}

} // namespace

std::string broadcastIndex(const std::string &idx, ArrayRef<int64_t> to,
                           ArrayRef<int64_t> from) {
  if (from == to)
    return idx;
  int64_t n = 1;
  for (int64_t d : from)
    n *= d;
  if (n == 1)
    return "0";
  auto fromStrides = stridesOf(from);
  size_t lead = to.size() - from.size();
  std::string sum;
  for (size_t d = lead; d < to.size(); ++d) {
    if (from[d - lead] == 1)
      continue;
    std::string term = coord(idx, to, d);
    if (fromStrides[d - lead] != 1)
      term += " * " + std::to_string(fromStrides[d - lead]);
    sum += (sum.empty() ? "" : " + ") + term;
  }
  return "(" + sum + ")";
}

bool isElementwise(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, NegOp, ReluOp, TanhOp, SigmoidOp,
             ReluGradOp, TanhGradOp, SigmoidGradOp, IdentityOp, BroadcastToOp,
             TransposeOp>(op);
}

Lowering::Lowering(func::FuncOp func, std::string &error)
    : func(func), error(error) {}

bool Lowering::fail(Operation *op, const std::string &message) {
  if (error.empty()) {
    std::string loc;
    llvm::raw_string_ostream os(loc);
    op->getLoc().print(os);
    error = "code generation: " + op->getName().getStringRef().str() + " at " +
            loc + ": " + message;
  }
  return false;
}

bool Lowering::isInlined(Value v) const { return inlined.contains(v); }

std::string Lowering::pointer(Value v) {
  auto it = pointers.find(v);
  if (it != pointers.end())
    return it->second;
  if (auto r = v.getDefiningOp<ReshapeOp>()) // a view of its input
    return pointer(r.getInput());
  // A constant or an argument without storage where memory is needed.
  Operation *where = v.getDefiningOp() ? v.getDefiningOp() : func.getOperation();
  fail(where, "a value used by a matrix product or loss needs a buffer, which "
              "code generation does not give it yet");
  return "nullptr";
}

std::string Lowering::load(Value v, const std::string &idx) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (func.getArgAttr(arg.getArgNumber(), attr::kLossSeed))
      return "P.seed";
    if (func.getArgAttr(arg.getArgNumber(), attr::kFirstMicroBatch))
      return "P.first";
  }
  if (auto c = v.getDefiningOp<ConstantOp>()) {
    auto dense = cast<DenseElementsAttr>(c.getValue());
    return floatLiteral(dense.getSplatValue<APFloat>().convertToDouble());
  }
  if (isInlined(v))
    return "(" + expression(v.getDefiningOp(), idx) + ")";
  if (auto r = v.getDefiningOp<ReshapeOp>()) // same elements, same order
    return load(r.getInput(), idx);
  return pointer(v) + "[" + idx + "]";
}

std::string Lowering::expression(Operation *op, const std::string &idx) {
  auto out = shapeOf(op->getResult(0));
  auto operand = [&](unsigned k) {
    Value v = op->getOperand(k);
    return load(v, broadcastIndex(idx, out, shapeOf(v)));
  };
  return llvm::TypeSwitch<Operation *, std::string>(op)
      .Case([&](AddOp) { return operand(0) + " + " + operand(1); })
      .Case([&](SubOp) { return operand(0) + " - " + operand(1); })
      .Case([&](MulOp) { return operand(0) + " * " + operand(1); })
      .Case([&](DivOp) { return operand(0) + " / " + operand(1); })
      .Case([&](NegOp) { return "-" + operand(0); })
      .Case([&](ReluOp) {
        std::string x = operand(0);
        return x + " > 0.0f ? " + x + " : 0.0f";
      })
      .Case([&](TanhOp) { return "tanhf(" + operand(0) + ")"; })
      .Case([&](SigmoidOp) { return "1.0f / (1.0f + expf(-" + operand(0) + "))"; })
      .Case([&](ReluGradOp) { return operand(1) + " > 0.0f ? " + operand(0) + " : 0.0f"; })
      .Case([&](TanhGradOp) {
        std::string y = operand(1);
        return operand(0) + " * (1.0f - " + y + " * " + y + ")";
      })
      .Case([&](SigmoidGradOp) {
        std::string y = operand(1);
        return operand(0) + " * " + y + " * (1.0f - " + y + ")";
      })
      .Case([&](IdentityOp) { return operand(0); })
      .Case([&](BroadcastToOp) { return operand(0); })
      .Case([&](TransposeOp t) {
        auto in = shapeOf(t.getInput());
        auto inStrides = stridesOf(in);
        std::string sum;
        for (auto [d, p] : llvm::enumerate(t.getPerm())) {
          std::string term = coord(idx, out, d);
          if (inStrides[p] != 1)
            term += " * " + std::to_string(inStrides[p]);
          sum += (sum.empty() ? "" : " + ") + term;
        }
        return load(t.getInput(), sum.empty() ? "0" : sum);
      })
      .Case([&](AccumulateOp a) {
        std::string g = load(a.getGrad(), idx);
        return "P.first ? " + g + " : " + load(a.getAcc(), idx) + " + " + g;
      })
      .Default([&](Operation *) { return std::string("/*unsupported*/0"); });
}

} // namespace otc
