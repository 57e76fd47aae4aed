// The lowering driver. Elementwise values whose every user reads them inside
// one consumer's loops (a fusion group) are computed there; every other value
// gets a typed buffer, placed in the arena by live range.
#include "Lowering.h"
#include "ReduceSteps.h"
#include "AbiEnums.h"
#include "Rules.h"
#include "otc/runtime/abi.h"
#include "otc/runtime/limits.h"

#include "otc/Dialect/OpFacts.h"
#include "otc/Dialect/OtcDialect.h"
#include "otc/Passes/Passes.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <cctype>
#include <map>
#include <cmath>
#include <sstream>

using namespace mlir;

namespace otc {

std::vector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = (int)shape.size() - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

std::vector<int64_t> storedStrides(ArrayRef<int64_t> shape, const Buffer &buffer) {
  std::vector<int64_t> s = stridesOf(shape);
  if (!buffer.pitch || shape.empty())
    return s;
  // Rows of the last dim start `pitch` apart; the dims before it nest as
  // usual over those rows.
  int64_t step = buffer.pitch;
  for (size_t d = shape.size() - 1; d-- > 0;) {
    s[d] = step;
    step *= shape[d];
  }
  return s;
}

std::vector<int64_t> mapStrides(const std::vector<int64_t> &own, const DimMap &map,
                                size_t rank) {
  std::vector<int64_t> strides(rank, 0);
  for (size_t j = 0; j < map.size(); ++j)
    if (map[j] >= 0)
      strides[map[j]] += own[j];
  return strides;
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

bool elemTypeOf(Type type, ElemType &out) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t)
    return false;
  Type e = t.getElementType();
  if (e.isF32()) out = ElemType::F32;
  else if (e.isF16()) out = ElemType::F16;
  else if (e.isBF16()) out = ElemType::BF16;
  else if (e.isInteger(64)) out = ElemType::I64;
  else if (e.isInteger(1)) out = ElemType::I1;
  else return false;
  return true;
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// The value a chain of reshapes (views in the same element order) shows.
Value viewBase(Value v) {
  while (auto r = v.getDefiningOp<ReshapeOp>())
    v = r.getInput();
  return v;
}

/// Whether `t` is one of the 16-bit float storage types.
bool isHalf(Type t) { return t.isF16() || t.isBF16(); }

std::string typeText(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

Lowering::Lowering(func::FuncOp func, bool training, std::string &error)
    : func(func), training(training), error(error) {}

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

int Lowering::addBuffer(ElemType type, std::vector<int64_t> shape,
                        Buffer::Place place, int binding, std::string name) {
  Buffer b;
  b.id = (int)prog->buffers.size();
  b.type = type;
  b.shape = std::move(shape);
  b.place = place;
  b.binding = binding;
  b.name = std::move(name);
  prog->buffers.push_back(std::move(b));
  return prog->buffers.back().id;
}

Step &Lowering::newStep(Step::Kind kind, Operation *op, std::vector<int64_t> shape,
                        std::vector<bool> reduced) {
  Step s;
  s.kind = kind;
  s.origin = op->getName().getStringRef().str();
  s.recomputed = op->hasAttr("otc.recomputed");
  // An op lowered to several library calls counts its FLOPs once.
  if (kind == Step::LibraryCall && op != lastCallOp)
    s.flops = opFlops(op);
  if (kind == Step::LibraryCall)
    lastCallOp = op;
  if (reduced.empty())
    reduced.assign(shape.size(), false);
  s.shape = std::move(shape);
  s.reduced = std::move(reduced);
  prog->steps.push_back(std::move(s));
  return prog->steps.back();
}

int Lowering::scratch(ElemType type, std::vector<int64_t> shape, const std::string &name) {
  int id = addBuffer(type, std::move(shape), Buffer::Place::Arena, 0, name);
  int64_t at = position.lookup(current);
  intervals.push_back({prog->buffers[id].bytes(), at, at});
  intervalBuffer.push_back(id);
  return id;
}

int Lowering::accumulatorOf(Operation *producer) const {
  auto it = nativeAccumulator.find(producer);
  return it == nativeAccumulator.end() ? -1 : it->second;
}

int Lowering::constantBuffer(ConstantOp c) {
  auto dense = cast<DenseElementsAttr>(c.getValue());
  ElemType type;
  elemTypeOf(c.getType(), type);
  int id = addBuffer(type, shapeOf(c.getResult()).vec(), Buffer::Place::Constant, 0, "constant");
  Buffer &b = prog->buffers[id];
  if (isa<FloatType>(dense.getElementType()))
    for (APFloat v : dense.getValues<APFloat>())
      b.values.push_back(v.convertToDouble());
  else
    for (APInt v : dense.getValues<APInt>())
      b.ivalues.push_back(dense.getElementType().isInteger(1) ? int64_t(v.getBoolValue())
                                                              : v.getSExtValue());
  return id;
}

int Lowering::buffer(Value v, Operation *user) {
  for (Value cur = v;;) {
    auto it = buffers.find(cur);
    if (it != buffers.end())
      return it->second;
    auto t = targets.find(cur);
    if (t != targets.end() && !t->second.accumulate)
      return t->second.buffer;
    if (auto c = cur.getDefiningOp<ConstantOp>()) // memory of its own, on demand
      return buffers[cur] = constantBuffer(c);
    auto r = cur.getDefiningOp<ReshapeOp>(); // a view of its input
    if (!r)
      break;
    cur = r.getInput();
  }
  fail(user, "an operand that is a scalar argument needs memory here, which code "
             "generation does not give it");
  return -1;
}

namespace {

/// Whether `user` reads its operand at the end of the step (a result, a
/// gradient buffer's accumulate, an assign), not where a step computes it.
bool readsAtEnd(Operation *user) { return isa<func::ReturnOp, AccumulateOp, AssignOp>(user); }

/// Whether an op strictly between `a` and `b` (either first) writes memory
/// (an assign, an accumulate) that `moved`'s computation may read: an
/// argument it reaches through elementwise ops and views, which it would
/// then read on the wrong side of the write. Any write at all where `moved`
/// is null. BatchNorm's running statistics are assigned between the op and
/// the ReLU it feeds, which reads none of them.
bool writesBetween(Operation *a, Operation *b, llvm::DenseMap<Operation *, int64_t> &position,
                   Operation *moved = nullptr) {
  if (position[b] < position[a])
    std::swap(a, b);
  llvm::SmallPtrSet<void *, 4> written;
  for (Operation *o = a->getNextNode(); o && o != b; o = o->getNextNode()) {
    if (auto s = dyn_cast<AssignOp>(o))
      written.insert(s.getTarget().getAsOpaquePointer());
    else if (auto acc = dyn_cast<AccumulateOp>(o))
      written.insert(acc.getAcc().getAsOpaquePointer());
  }
  if (written.empty() || !moved)
    return !written.empty();
  const RuleRegistry &rules = RuleRegistry::get();
  llvm::SmallPtrSet<void *, 16> seen;
  SmallVector<Value> work(moved->getOperands());
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v.getAsOpaquePointer()).second)
      continue;
    if (written.contains(v.getAsOpaquePointer()))
      return true;
    Operation *def = v.getDefiningOp();
    if (!def)
      continue;
    const StepRule *step = rules.stepRule(def);
    if (!step || step->output == StepRule::Output::None)
      work.append(def->operand_begin(), def->operand_end());
  }
  return false;
}

/// A value at a dim map: the key of NodeBuilder::values.
std::pair<const void *, DimMap> valueKey(Value v, const DimMap &m) {
  return {v.getAsOpaquePointer(), m};
}

} // namespace

bool Lowering::classify() {
  const RuleRegistry &rules = RuleRegistry::get();
  Block &body = func.getBody().front();
  int64_t i = 0;
  for (Operation &op : body)
    position[&op] = i++;

  for (Operation &op : body.without_terminator()) {
    for (Type t : op.getResultTypes()) {
      ElemType e;
      if (!elemTypeOf(t, e))
        return fail(&op, "element type of " + typeText(t) + " is not supported");
    }
    if (!rules.elementwiseRule(&op) && !rules.stepRule(&op))
      return fail(&op, "has no code generation rule");
  }

  // Fusion groups, from the last op up: an elementwise value is computed
  // inside its users' loops when they all read it there and share one root.
  // A widening cast of a 16-bit value is a load's conversion, free to repeat:
  // it is computed in every user's loop even across roots, so no float32
  // copy is kept (the float32 logits that a cross-entropy's forward and
  // gradient both read). Its operand then keeps a buffer. So is one op whose
  // operands are all arguments or constants, which stay in memory anyway.
  llvm::DenseMap<Operation *, Operation *> &root = rootOf;
  llvm::DenseSet<Operation *> repeated; // inlined across roots
  func.walk([&](AssignOp a) { assigned.insert(a.getTarget()); });
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    root[&op] = &op;
    if (!rules.elementwiseRule(&op) || op.getNumResults() != 1)
      continue;
    Value v = op.getResult(0);
    Operation *common = nullptr, *latest = nullptr;
    bool ok = !v.use_empty(), shared = true, viaRepeated = false;
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      const StepRule *step = rules.stepRule(user);
      bool reads = rules.elementwiseRule(user) ||
                   (step && step->readsInLoop && step->readsInLoop(user, use.getOperandNumber()));
      Operation *r = root.lookup(user);
      // A user computed in several loops repeats this op in each of them.
      viaRepeated |= repeated.contains(user);
      if (!reads || !r)
        ok = false;
      else if (common && r != common)
        shared = false;
      common = r;
      if (r && (!latest || position[r] > position[latest]))
        latest = r;
    }
    auto widening = [&] {
      auto c = dyn_cast<CastOp>(op);
      if (!c)
        return false;
      Type from = cast<RankedTensorType>(c.getInput().getType()).getElementType();
      Type to = cast<RankedTensorType>(v.getType()).getElementType();
      return isHalf(from) && to.isF32();
    };
    // One op over arguments and constants alone (attention's causal mask,
    // `mask == 0` on a registered buffer) costs a load either way.
    auto ofPersistent = [&] {
      return llvm::all_of(op.getOperands(), [&](Value o) {
        Value base = viewBase(o);
        return base.getDefiningOp<ConstantOp>() || unwrittenArgument(base);
      });
    };
    // A user repeated in several loops: this op is repeated with it, or stored.
    if (viaRepeated)
      shared = false;
    bool repeat = ok && !shared && !viaRepeated && (widening() || ofPersistent());
    // Otherwise a step that stores the value anyway (a host, a feeder) is
    // preferred to computing it again in each reader.
    Operation *host = nullptr, *feeder = nullptr;
    Value fed;
    if (!(ok && shared) && !repeat && !(host = hostFor(op, rules)) &&
        !(feeder = feederFor(op, rules, fed)))
      repeat = ok && cheaperRepeated(op, rules, repeated);
    if (repeat) {
      repeated.insert(&op);
      shared = true;
      common = latest; // the operand's buffer lives until the last user
    }
    if (ok && shared) {
      inlined.insert(v);
      root[&op] = common;
    } else if (host) {
      hostOf[v] = host;
      root[&op] = host; // its operands, and its inlined producers, are read there
    } else if (feeder) {
      hostOf[v] = feeder;
      root[&op] = feeder;
      fedTo[fed].push_back(&op);
    }
  }
  feedNarrowingCasts();
  return true;
}

void Lowering::feedNarrowingCasts() {
  // After the walk, which meets a cast before its operand's host is known.
  for (Operation &op : func.getBody().front().without_terminator()) {
    auto c = dyn_cast<CastOp>(op);
    ElemType to;
    if (!c || inlined.contains(c.getResult()) || hostOf.count(c.getResult()) ||
        !elemTypeOf(c.getType(), to) || (to != ElemType::F16 && to != ElemType::BF16) ||
        !cast<RankedTensorType>(c.getInput().getType()).getElementType().isF32())
      continue;
    // One use: left to the cast's own step (conservative: the value would
    // then need no float32 memory, which store() does not yet exploit here).
    Value in = c.getInput();
    if (in.hasOneUse() || llvm::any_of(c->getUsers(), readsAtEnd))
      continue;
    // Only a value computed in another op's step (hosted or fed). A row
    // kernel's own result (the final LayerNorm's gradient) is left alone:
    // its copy would then live from the kernel on, next to the backward's
    // peak, and the arena packs worse (4.2 MB more for bench/amp's fp16 GPT).
    Operation *host = hostOf.lookup(in);
    // Its readers read what the host stores: they must come after it (a
    // host that reads the value later than it is made, hostFor's, may not).
    if (!host || llvm::any_of(c->getUsers(), [&](Operation *u) {
          Operation *r = rootOf.lookup(u);
          return !r || position[r] <= position[host];
        }))
      continue;
    // Nothing between the host and the cast, whichever comes first.
    if (writesBetween(host, &op, position, &op))
      continue;
    hostOf[c.getResult()] = host;
    rootOf[&op] = host;
    fedTo[in].push_back(&op);
  }
}

bool Lowering::unwrittenArgument(Value v) {
  // Not a gradient buffer or an assigned parameter: the step writes those,
  // so a later read would see another value.
  auto arg = dyn_cast<BlockArgument>(v);
  return arg && !assigned.contains(v) &&
         (func.getArgAttr(arg.getArgNumber(), attr::kParam) ||
          func.getArgAttr(arg.getArgNumber(), attr::kInput));
}

bool Lowering::cheaperRepeated(Operation &op, const RuleRegistry &rules,
                               const llvm::DenseSet<Operation *> &repeated) {
  // At most one FLOP an element (relu_grad's select): repeating it costs
  // loads, not arithmetic.
  int64_t elements = resultElements(&op);
  if (elements <= 0 || opFlops(&op) > elements)
    return false;
  // The steps that read it, through users repeated in several.
  llvm::SmallPtrSet<Operation *, 4> roots;
  SmallVector<Operation *> work(op.getResult(0).getUsers());
  while (!work.empty()) {
    Operation *user = work.pop_back_val();
    if (repeated.contains(user))
      work.append(user->getUsers().begin(), user->getUsers().end());
    else
      roots.insert(rootOf.lookup(user));
  }
  auto bytes = [](Value v) {
    auto t = cast<RankedTensorType>(v.getType());
    return t.getNumElements() * int64_t((t.getElementTypeBitWidth() + 7) / 8);
  };
  int64_t readers = int64_t(roots.size()), operandBytes = 0;
  for (Value o : op.getOperands()) {
    // In memory anyway, unchanged until the last reader: an argument the
    // step does not write, a constant, or a step's own stored result that
    // no accumulate or assign takes as its destination.
    Value base = viewBase(o);
    if (isa<BlockArgument>(base)) {
      if (!unwrittenArgument(base))
        return false;
    } else if (!base.getDefiningOp<ConstantOp>()) {
      Operation *def = base.getDefiningOp();
      const StepRule *step = rules.stepRule(def);
      // An elementwise value that a library call reads (the ReLU that a
      // convolution reads) is stored, never computed in a reader's loops.
      auto stored = [&] {
        return llvm::any_of(base.getUses(), [&](OpOperand &use) {
          const StepRule *reader = rules.stepRule(use.getOwner());
          return reader && !rules.elementwiseRule(use.getOwner()) &&
                 !(reader->readsInLoop &&
                   reader->readsInLoop(use.getOwner(), use.getOperandNumber()));
        });
      };
      if (rules.elementwiseRule(def) ? !stored()
                                     : !step || step->output == StepRule::Output::None)
        return false;
      if (llvm::any_of(base.getUsers(), [](Operation *u) { return isa<AccumulateOp, AssignOp>(u); }))
        return false;
    }
    // A broadcast operand (a bias) would keep a reduction that reads it from
    // collapsing its dims, and from merging with the others over the value.
    // A wider operand (a narrowing cast's) would be kept longer than the
    // result it replaces.
    if (cast<RankedTensorType>(o.getType()).getShape() != shapeOf(op.getResult(0)) ||
        bytes(o) > bytes(op.getResult(0)))
      return false;
    operandBytes += bytes(o);
  }
  // Each reader loads the operands, against one load of them, one store of
  // the result and a load of it per reader. Even, it still saves a launch
  // and a buffer (and reductions over one value merge into one step, so
  // their roots overcount the readers).
  return readers * operandBytes <= operandBytes + (1 + readers) * bytes(op.getResult(0));
}

Operation *Lowering::hostFor(Operation &op, const RuleRegistry &rules) {
  Value v = op.getResult(0);
  if (v.use_empty())
    return nullptr;
  // The first reader, by the position its loops run at; every other reader
  // must come strictly later, since they read what the host stores.
  Operation *first = nullptr;
  int64_t at = INT64_MAX;
  for (Operation *user : v.getUsers()) {
    if (readsAtEnd(user))
      return nullptr;
    Operation *r = rootOf.lookup(user);
    if (!r)
      return nullptr;
    int64_t p = position[r];
    if (p < at)
      first = user, at = p;
  }
  const StepRule *rule = rules.stepRule(first);
  if (!rule || !rule->hosts || rootOf.lookup(first) != first)
    return nullptr;
  unsigned uses = 0;
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (user == first) {
      if (!rule->hosts(first, use.getOperandNumber()))
        return nullptr;
      ++uses;
    } else if (position[rootOf.lookup(user)] <= at) {
      return nullptr;
    }
  }
  if (uses != 1)
    return nullptr;
  // Nothing between writes memory the computation may read.
  return writesBetween(&op, first, position, &op) ? nullptr : first;
}

bool Lowering::onlyFed(Value v) const {
  auto fed = fedTo.find(v);
  // Read by the ops fed, or by producers inlined into them (feederFor).
  return fed != fedTo.end() && llvm::all_of(v.getUsers(), [&](Operation *u) {
           return llvm::is_contained(fed->second, u) ||
                  (u->getNumResults() == 1 && inlined.contains(u->getResult(0)) &&
                   rootOf.lookup(u) == v.getDefiningOp());
         });
}

Operation *Lowering::feederFor(Operation &op, const RuleRegistry &rules, Value &fed) {
  Value v = op.getResult(0);
  const ElementwiseRule *rule = rules.elementwiseRule(&op);
  if (v.use_empty() || !rule || rule->operandMap)
    return nullptr;
  if (llvm::any_of(v.getUsers(), readsAtEnd))
    return nullptr;
  // The values op computes from, one to one: its operands, and those of
  // producers over v's shape whose one use it is (inlined here later, as
  // the add in relu(batch_norm(x) + shortcut)).
  SmallVector<Value> leaves, work(op.getOperands());
  while (!work.empty()) {
    Value o = work.pop_back_val();
    Operation *def = o.getDefiningOp();
    const ElementwiseRule *inner = def ? rules.elementwiseRule(def) : nullptr;
    if (inner && !inner->operandMap && def->getNumResults() == 1 && o.hasOneUse() &&
        shapeOf(o) == shapeOf(v) && !isa<CastOp>(def))
      work.append(def->operand_begin(), def->operand_end());
    else
      leaves.push_back(o);
  }
  // The latest such value stored one to one, over v's shape, by a step root.
  Operation *feeder = nullptr;
  for (Value o : leaves) {
    Operation *def = o.getDefiningOp();
    const StepRule *step = def ? rules.stepRule(def) : nullptr;
    if (!step || !step->feeds || !step->feeds(def, cast<OpResult>(o).getResultNumber()) ||
        shapeOf(o) != shapeOf(v))
      continue;
    if (!feeder || position[def] > position[feeder])
      feeder = def, fed = o;
  }
  // Only where it takes the operand's place: an operand with other users
  // stays in memory, and this value would live from the feeder on. A
  // narrowing cast is its operand's store already.
  if (!feeder || !fed.hasOneUse() || isa<CastOp>(op))
    return nullptr;
  // Every other value exists before the feeder (not another of its
  // results, which the same step stores), and nothing between writes memory.
  for (Value o : leaves)
    if (Operation *def = o.getDefiningOp(); o != fed && def && position[def] >= position[feeder])
      return nullptr;
  return writesBetween(feeder, &op, position, &op) ? nullptr : feeder;
}

namespace {

/// The rows of a slice of `big` with steps 1 that cuts one dim, every dim
/// after it whole: its offset, pitch and row width in elements; false for
/// any other slice.
bool sliceRows(SliceOp s, RowView &view, int64_t &width) {
  auto big = shapeOf(s.getInput()), small = shapeOf(s.getResult());
  int cut = -1;
  for (size_t d = 0; d < big.size(); ++d) {
    if (s.getSteps()[d] != 1)
      return false;
    if (small[d] != big[d]) {
      if (cut >= 0)
        return false;
      cut = int(d);
    }
  }
  if (cut < 0)
    return false;
  int64_t inner = 1;
  for (size_t d = size_t(cut) + 1; d < big.size(); ++d)
    inner *= big[d];
  view.offset = s.getStarts()[size_t(cut)] * inner;
  view.pitch = big[size_t(cut)] * inner;
  width = small[size_t(cut)] * inner;
  return true;
}

/// The op operands that read `v` past any reshapes, into `uses`.
void readersThroughViews(Value v, SmallVectorImpl<OpOperand *> &uses) {
  for (OpOperand &use : v.getUses()) {
    if (auto r = dyn_cast<ReshapeOp>(use.getOwner()))
      readersThroughViews(r.getResult(), uses);
    else
      uses.push_back(&use);
  }
}

} // namespace

void Lowering::findRowViews() {
  const RuleRegistry &rules = RuleRegistry::get();
  auto widthOf = [&](Operation *op, bool result, unsigned k) -> int64_t {
    const StepRule *rule = rules.stepRule(op);
    return rule && rule->rowWidth ? rule->rowWidth(op, result, k) : 0;
  };
  for (Operation &op : func.getBody().front().without_terminator()) {
    // A view's readers read `base` where they run, not where the view is:
    // it must have memory of its own (not inlined, not itself a view), and
    // an argument (a parameter the step assigns, a gradient buffer) must
    // not be written in between. Values are written once.
    auto ownMemory = [&](Value base) {
      return !inlined.contains(base) && !rowViews.count(base) && !transposedViews.count(base) &&
             !assigned.contains(base);
    };
    auto writtenBefore = [&](Value base, Operation *reader) {
      return isa<BlockArgument>(base) && writesBetween(&op, reader, position);
    };
    // A slice whose every reader reads its rows in place.
    if (auto s = dyn_cast<SliceOp>(op)) {
      RowView view{s.getInput()};
      int64_t width = 0;
      SmallVector<OpOperand *> uses;
      readersThroughViews(s.getResult(), uses);
      Value base = viewBase(s.getInput());
      if (!sliceRows(s, view, width) || uses.empty() || !ownMemory(base) ||
          llvm::any_of(uses, [&](OpOperand *u) {
            return widthOf(u->getOwner(), false, u->getOperandNumber()) != width ||
                   writtenBefore(base, u->getOwner());
          }))
        continue;
      rowViews[s.getResult()] = view;
      continue;
    }
    // A transpose of the last two dims whose every reader reads its input
    // transposed (a GEMM's trans flag): no copy. Not of a constant (a splat
    // is a literal in the transpose's loop, and would become a buffer).
    if (auto t = dyn_cast<TransposeOp>(op)) {
      ArrayRef<int64_t> perm = t.getPerm();
      size_t rank = perm.size();
      bool swaps = rank >= 2 && perm[rank - 1] == int64_t(rank - 2) &&
                   perm[rank - 2] == int64_t(rank - 1);
      for (size_t d = 0; d + 2 < rank; ++d)
        swaps = swaps && perm[d] == int64_t(d);
      Value r = t.getResult(), base = viewBase(t.getInput());
      if (swaps && !r.use_empty() && ownMemory(base) && !base.getDefiningOp<ConstantOp>() &&
          llvm::all_of(r.getUses(), [&](OpOperand &u) {
            const StepRule *rule = rules.stepRule(u.getOwner());
            return rule && rule->readsTransposed &&
                   rule->readsTransposed(u.getOwner(), u.getOperandNumber()) &&
                   !writtenBefore(base, u.getOwner());
          }))
        transposedViews[r] = t.getInput();
      continue;
    }
    // A result read once, by a concat (past reshapes), written into its
    // place there: the concat's buffer then lives from this op on.
    for (OpResult r : op.getResults()) {
      int64_t width = widthOf(&op, true, r.getResultNumber());
      Value v = r;
      while (width && v.hasOneUse() && isa<ReshapeOp>(*v.getUsers().begin()))
        v = v.getUsers().begin()->getResult(0);
      auto c = width && v.hasOneUse() ? dyn_cast<ConcatOp>(*v.getUsers().begin()) : ConcatOp();
      // Not into a concat that accumulates into a gradient buffer or the loss.
      auto target = c ? targets.find(c.getResult()) : targets.end();
      if (!c || (target != targets.end() && target->second.accumulate) || targets.count(r))
        continue;
      auto big = shapeOf(c.getResult());
      size_t axis = size_t(c.getAxis());
      int64_t inner = 1, at = 0;
      for (size_t d = axis + 1; d < big.size(); ++d)
        inner *= big[d];
      for (Value in : c.getInputs()) {
        if (in == v)
          break;
        at += shapeOf(in)[axis];
      }
      if (shapeOf(v)[axis] * inner != width)
        continue;
      rowViews[r] = {c.getResult(), at * inner, big[axis] * inner};
      auto [it, fresh] = rowsWrittenFrom.try_emplace(c.getResult(), position[&op]);
      if (!fresh)
        it->second = std::min(it->second, position[&op]);
    }
  }
}

const RowView *Lowering::rowView(Value v) const {
  auto it = rowViews.find(viewBase(v));
  return it == rowViews.end() ? nullptr : &it->second;
}

Value Lowering::transposedView(Value v) const { return transposedViews.lookup(v); }

int64_t Lowering::usePosition(Operation *op) {
  if (auto it = rootOf.find(op); it != rootOf.end() && it->second != op)
    return position[it->second];
  // A view's readers read its memory (a slice read in place: its input's).
  if (isa<ReshapeOp>(op) || (isa<SliceOp>(op) && rowViews.count(op->getResult(0))) ||
      (isa<TransposeOp>(op) && transposedViews.count(op->getResult(0)))) {
    int64_t last = position[op];
    for (Operation *u : op->getResult(0).getUsers())
      last = std::max(last, usePosition(u));
    return last;
  }
  return position[op];
}

/// The parameter `v` is (through reshapes, which keep the element order), as
/// an index in the program's parameters, or -1. Parameters the step writes
/// itself (otc.assign: BatchNorm's running statistics) count as none.
static int paramOf(Value v, func::FuncOp func, const Program &prog,
                   const llvm::DenseSet<Value> &assigned) {
  v = viewBase(v);
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || assigned.contains(v))
    return -1;
  auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), attr::kParam);
  for (size_t p = 0; name && p < prog.params.size(); ++p)
    if (prog.params[p].name == name.getValue())
      return (int)p;
  return -1;
}

bool Lowering::makeBuffers() {
  const RuleRegistry &rules = RuleRegistry::get();
  for (Operation &op : func.getBody().front().without_terminator()) {
   for (Value r : op.getResults()) {
    if (inlined.contains(r) || targets.count(r) || buffers.count(r) || onlyFed(r) ||
        rowViews.count(r) || transposedViews.count(r) || isa<ConstantOp, ReshapeOp>(op) ||
        (nativeAccumulator.count(&op) && cast<OpResult>(r).getResultNumber() == 0))
      continue;
    ElemType type;
    elemTypeOf(r.getType(), type);
    std::string name = op.getName().getStringRef().str();
    // A training step's 16-bit copy of a parameter is written by the
    // optimizer update, in the same kernel, and kept between steps: no cast
    // kernel per micro-batch.
    int p = isa<CastOp>(op) && training && (type == ElemType::F16 || type == ElemType::BF16)
                ? paramOf(op.getOperand(0), func, *prog, assigned)
                : -1;
    if (p >= 0 && (prog->params[p].lowType == ElemType::F32 || prog->params[p].lowType == type)) {
      prog->params[p].lowType = type;
      buffers[r] = addBuffer(type, shapeOf(r).vec(), Buffer::Place::LowParam, p,
                             prog->params[p].name + ".low");
      continue;
    }
    // A step's float32 result whose one use narrows it to 16 bits (the
    // cross-entropy gradient before a low-precision GEMM) is stored narrowed:
    // the store rounds to nearest even as the cast would, and no float32 copy
    // is kept. The cast then reads the 16-bit buffer, or has no step at all.
    Value live = r; // whose uses end the buffer's life
    Operation *narrowing = r.hasOneUse() ? *r.getUsers().begin() : nullptr;
    const StepRule *producer = rules.stepRule(&op);
    ElemType to;
    if (narrowing && isa<CastOp>(narrowing) && type == ElemType::F32 && producer &&
        producer->output == StepRule::Output::Store &&
        elemTypeOf(narrowing->getResult(0).getType(), to) &&
        (to == ElemType::F16 || to == ElemType::BF16)) {
      Value c = narrowing->getResult(0);
      type = to;
      if (!inlined.contains(c) && !targets.count(c)) {
        foldedCasts.insert(narrowing);
        buffers[c] = (int)prog->buffers.size(); // the buffer made below
        live = c;
      }
    }
    int64_t last = position[&op];
    for (Operation *u : live.getUsers())
      last = std::max(last, usePosition(u));
    if (int in = producer ? inPlaceBuffer(&op, producer->inPlace, producer->inPlaceResult, type, r)
                          : -1;
        in >= 0) {
      buffers[r] = in;
      if (live != r)
        buffers[live] = in;
      Interval &iv = intervals[size_t(llvm::find(intervalBuffer, in) - intervalBuffer.begin())];
      iv.end = std::max(iv.end, last);
      continue;
    }
    int id = addBuffer(type, shapeOf(r).vec(), Buffer::Place::Arena, 0, name);
    buffers[r] = id;
    if (isa<CastOp>(op) && (type == ElemType::F16 || type == ElemType::BF16)) {
      // A parameter, perhaps transposed or reshaped on the way (a Linear's
      // weight), cast to 16 bits.
      Value v = op.getOperand(0);
      while (Operation *def = v.getDefiningOp()) {
        if (!isa<ReshapeOp, TransposeOp, SliceOp>(def))
          break;
        v = def->getOperand(0);
      }
      auto arg = dyn_cast<BlockArgument>(v);
      prog->buffers[id].lowCopy = arg && func.getArgAttr(arg.getArgNumber(), attr::kParam);
    }
    // A value fed by an earlier step is written there.
    int64_t begin = position[&op];
    if (Operation *host = hostOf.lookup(r))
      begin = std::min(begin, position[host]);
    if (auto from = rowsWrittenFrom.find(r); from != rowsWrittenFrom.end())
      begin = std::min(begin, from->second); // rows written by earlier producers
    intervals.push_back({prog->buffers[id].bytes(), begin, last});
    intervalBuffer.push_back(id);
   }
  }
  return true;
}

int Lowering::inPlaceBuffer(Operation *op, int operand, unsigned resultIndex, ElemType type,
                            Value result) {
  if (operand < 0 || resultIndex >= op->getNumResults() || result != op->getResult(resultIndex))
    return -1;
  // Through a widening cast computed in this op's loads (16-bit logits).
  Value in = op->getOperand(operand);
  if (auto c = in.getDefiningOp<CastOp>(); c && inlined.contains(in))
    in = c.getInput();
  auto it = buffers.find(viewBase(in));
  if (it == buffers.end())
    return -1;
  const Buffer &b = prog->buffers[size_t(it->second)];
  auto slot = llvm::find(intervalBuffer, it->second);
  if (b.place != Buffer::Place::Arena || b.lowCopy || b.type != type ||
      b.count() != cast<RankedTensorType>(result.getType()).getNumElements() || slot == intervalBuffer.end() ||
      intervals[size_t(slot - intervalBuffer.begin())].end != position[op])
    return -1;
  return it->second;
}

bool Lowering::placeArena() {
  prog->arenaBytes = placeBuffers(intervals);
  if (prog->arenaBytes > OTC_MAX_ARENA_BYTES) {
    error = "the step needs an arena of more than " + std::to_string(OTC_MAX_ARENA_BYTES) +
            " bytes, otc's limit for one micro-batch; lower --micro-batch";
    return false;
  }
  for (size_t i = 0; i < intervals.size(); ++i)
    prog->buffers[intervalBuffer[i]].offset = intervals[i].offset;
  // The copies' peak: the arena reuses their bytes once they are dead.
  std::map<int64_t, int64_t> delta; // live lowCopy bytes change at each position
  for (size_t i = 0; i < intervals.size(); ++i)
    if (prog->buffers[intervalBuffer[i]].lowCopy) {
      delta[intervals[i].begin] += intervals[i].bytes;
      delta[intervals[i].end + 1] -= intervals[i].bytes;
    }
  int64_t live = 0;
  for (auto [at, d] : delta)
    prog->lowCopyBytes = std::max(prog->lowCopyBytes, live += d);
  return true;
}

int Lowering::leaf(NodeBuilder &b, Value v, const DimMap &map) {
  Value base = viewBase(v);
  if (auto c = base.getDefiningOp<ConstantOp>();
      c && cast<DenseElementsAttr>(c.getValue()).isSplat()) {
    auto dense = cast<DenseElementsAttr>(c.getValue());
    Type e = dense.getElementType();
    if (isa<FloatType>(e))
      return b.constant(dense.getSplatValue<APFloat>().convertToDouble());
    int64_t iv = dense.getSplatValue<APInt>().getSExtValue();
    return b.integer(iv, e.isInteger(1) ? ElemType::I1 : ElemType::I64);
  }
  if (auto arg = dyn_cast<BlockArgument>(base)) {
    if (training && func.getArgAttr(arg.getArgNumber(), attr::kLossSeed))
      return b.seed();
    if (training && func.getArgAttr(arg.getArgNumber(), attr::kFirstMicroBatch))
      return b.first();
  }
  int id = buffer(v, current);
  if (id < 0)
    return -1;
  return b.load(id, prog->buffers[id].type,
                mapStrides(storedStrides(shapeOf(v), prog->buffers[id]), map,
                           b.getStep().shape.size()));
}

int Lowering::expr(NodeBuilder &b, Value v, const DimMap &map, bool compute) {
  const RuleRegistry &rules = RuleRegistry::get();
  struct Frame {
    Value v;
    DimMap map;
    std::vector<DimMap> operandMaps; // empty until expanded
    bool expanded = false;
  };
  auto key = valueKey;
  // Depth-first with an explicit stack: a chain of any length is fine.
  std::vector<Frame> stack;
  stack.push_back({v, map});
  while (!stack.empty() && error.empty()) {
    if (b.values.count(key(stack.back().v, stack.back().map))) {
      stack.pop_back();
      continue;
    }
    Value cur = stack.back().v;
    bool hosted = current && hostOf.lookup(cur) == current;
    if (!inlined.contains(cur) && !(compute && cur == v) && !hosted) {
      int n = leaf(b, cur, stack.back().map);
      b.values[key(cur, stack.back().map)] = n;
      stack.pop_back();
      continue;
    }
    Operation *op = cur.getDefiningOp();
    const ElementwiseRule *rule = rules.elementwiseRule(op);
    if (!stack.back().expanded) {
      stack.back().expanded = true;
      std::vector<DimMap> maps;
      for (unsigned k = 0; k < op->getNumOperands(); ++k)
        maps.push_back(rule->operandMap
                           ? rule->operandMap(op, k, stack.back().map)
                           : broadcastMap(shapeOf(op->getOperand(k)), shapeOf(cur),
                                          stack.back().map));
      stack.back().operandMaps = maps;
      for (unsigned k = 0; k < op->getNumOperands(); ++k)
        stack.push_back({op->getOperand(k), maps[k]});
      continue;
    }
    std::vector<int> args;
    for (unsigned k = 0; k < op->getNumOperands(); ++k)
      args.push_back(b.values.at(key(op->getOperand(k), stack.back().operandMaps[k])));
    int n = rule->build(op, b, args);
    // A 16-bit result rounds here, so a fused chain rounds at every op
    // boundary as an unfused one does: results never depend on fusion.
    ElemType t;
    if (n >= 0 && elemTypeOf(cur.getType(), t))
      n = b.roundTo(n, t);
    b.values[key(cur, stack.back().map)] = n;
    if (hosted && n >= 0) { // the host runs over its elements one to one
      const DimMap &m = stack.back().map;
      std::vector<bool> seen(b.getStep().shape.size(), false);
      for (int d : m)
        if (d < 0 || seen[size_t(d)]) // LCOV_EXCL_LINE: StepRule::hosts promises it
          return fail(current, "a hosted value is not read one to one"), -1;
        else
          seen[size_t(d)] = true;
      store(b, cur, n, m);
    }
    stack.pop_back();
  }
  if (!error.empty())
    return -1;
  return b.values.at(key(v, map));
}

void Lowering::store(NodeBuilder &b, Value result, int node, const DimMap &map) {
  // A target (a result, the loss, a gradient buffer) is dense.
  std::vector<int64_t> strides =
      mapStrides(stridesOf(shapeOf(result)), map, b.getStep().shape.size());
  stored.insert(result);
  // Elementwise consumers fed here (StepRule::feeds): computed from this
  // node, rounded as a load of the stored value would be, and stored too.
  if (auto fed = fedTo.find(result); fed != fedTo.end()) {
    int seen = node;
    ElemType t;
    if (elemTypeOf(result.getType(), t))
      seen = b.roundTo(node, t);
    b.values[valueKey(result, map)] = seen;
    for (Operation *e : fed->second)
      if (expr(b, e->getResult(0), map) < 0)
        return;
  }
  if (onlyFed(result))
    return;
  auto t = targets.find(result);
  if (t != targets.end()) {
    int to = t->second.buffer;
    if (t->second.accumulate) {
      // The loss buffer sums seed x loss: the window's objective, scaled.
      if (to == lossBuffer)
        node = b.binary(Node::Mul, b.seed(), node);
      int prior = b.load(to, prog->buffers[to].type, strides);
      int sum = b.binary(Node::Add, prior, node);
      node = b.select(b.first(), node, sum);
    }
    b.store(to, std::move(strides), node);
    return;
  }
  int to = buffer(result, current);
  if (to >= 0)
    b.store(to, mapStrides(storedStrides(shapeOf(result), prog->buffers[to]), map,
                           b.getStep().shape.size()),
            node);
}

bool Lowering::finishResults() {
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  current = ret;
  // A result no step wrote (an argument, a view, a value returned twice) is
  // copied by one more elementwise step.
  auto copy = [&](Value v, Target t) {
    Step &s = newStep(Step::Elementwise, ret, shapeOf(v).vec());
    NodeBuilder b(s);
    int n = expr(b, v, identityMap(shapeOf(v).size()));
    if (n < 0)
      return false;
    targets[v] = t;
    store(b, v, n, identityMap(shapeOf(v).size()));
    collapseDims(s);
    return true;
  };
  // Whether a step already wrote `v` straight into `buffer` (a value with
  // other uses, or returned twice, went to the arena or another result).
  auto wroteInto = [&](Value v, int buffer) {
    auto t = targets.find(v);
    return t != targets.end() && t->second.buffer == buffer &&
           (stored.count(v) || writtenByOwner.count(v));
  };
  if (training)
    return wroteInto(loss, lossBuffer) || copy(loss, {lossBuffer, true});
  // Decide every copy before making any: a copy retargets its value.
  std::vector<unsigned> copies;
  for (auto [r, v] : llvm::enumerate(ret.getOperands()))
    if (!wroteInto(v, resultBuffers[r]))
      copies.push_back(r);
  for (unsigned r : copies)
    if (!copy(ret.getOperand(r), {resultBuffers[r], false}))
      return false;
  return true;
}

int Lowering::ownResult(Value v, Operation *op) {
  int out = buffer(v, op);
  if (out >= 0)
    writtenByOwner.insert(v);
  return out;
}

bool Lowering::run(Program &program) {
  prog = &program;
  if (!func.getBody().hasOneBlock())
    return fail(func, "expected a single block");
  if (!classify() || !bindArguments() || !bindResults())
    return false;
  findRowViews();
  if (!makeBuffers())
    return false;
  padRows();
  if (auto policy = func->getAttrOfType<DictionaryAttr>(attr::kLossScale)) {
    auto mode = policy.getAs<LossScaleModeAttr>("mode");
    auto init = policy.getAs<FloatAttr>("init_scale"), low = policy.getAs<FloatAttr>("min_scale");
    auto window = policy.getAs<IntegerAttr>("window");
    auto hysteresis = policy.getAs<IntegerAttr>("hysteresis");
    if (!mode || !init || !low || !window || !hysteresis)
      return fail(func, "malformed otc.loss_scale; run otc-loss-scaling");
    prog->lossScale = {toAbi(mode.getValue()),
                       init.getValueAsDouble(), low.getValueAsDouble(), window.getInt(),
                       hysteresis.getInt()};
  }
  if (auto policy = func->getAttrOfType<RecomputePolicyAttr>(kRecomputePolicy))
    prog->recompute = toAbi(policy.getValue());
  if (auto module = func->getParentOfType<ModuleOp>())
    if (auto table = module->getAttrOfType<DictionaryAttr>(attr::kPrecisionPolicy))
      if (auto precision = table.getAs<PrecisionAttr>("precision"))
        prog->precision = toAbi(precision.getValue());
  const RuleRegistry &rules = RuleRegistry::get();
  for (Operation &op : func.getBody().front().without_terminator()) {
    if (op.getNumResults() == 1 &&
        (inlined.contains(op.getResult(0)) || hostOf.count(op.getResult(0))))
      continue;
    if (auto it = buffers.find(op.getNumResults() == 1 ? op.getResult(0) : Value());
        (it != buffers.end() && prog->buffers[it->second].place == Buffer::Place::LowParam) ||
        foldedCasts.contains(&op) ||
        (isa<SliceOp, TransposeOp>(op) &&
         (rowViews.count(op.getResult(0)) || transposedViews.count(op.getResult(0)))))
      continue; // the optimizer update writes it, its producer's store, or a read in place
    current = &op;
    size_t before = prog->steps.size();
    const StepRule *step = rules.stepRule(&op);
    if (!(step ? step->lower(&op, *this) : lowerAsElementwise(&op, *this)))
      return fail(&op, "lowering failed");
    for (size_t s = before; s < prog->steps.size(); ++s) {
      stepAt.push_back(position[&op]);
      if (prog->steps[s].kind != Step::Gemm && prog->steps[s].kind != Step::LibraryCall)
        collapseDims(prog->steps[s]);
    }
  }
  rewriteReduces();
  foldEpilogues();
  hoistAccumulates();
  markLowOnly();
  return finishResults() && placeArena() && error.empty();
}

void Lowering::spanBuffers(const std::vector<int> &ids, int64_t from, int64_t to) {
  for (int b : ids) {
    auto it = llvm::find(intervalBuffer, b);
    if (it == intervalBuffer.end())
      continue;
    Interval &iv = intervals[size_t(it - intervalBuffer.begin())];
    iv.begin = std::min(iv.begin, from);
    iv.end = std::max(iv.end, to);
  }
}

void Lowering::rewriteReduces() {
  auto &steps = prog->steps;
  // Every arena buffer of a step that spans positions [from, to] lives
  // through all of them: one step reads and writes them all.
  auto span = [&](const Step &s, int64_t from, int64_t to) {
    spanBuffers(stepBuffers(s), from, to);
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    int64_t from = stepAt[i], to = stepAt[i];
    while (i + 1 < steps.size() && mergeableReduces(steps[i], steps[i + 1])) {
      to = stepAt[i + 1];
      mergeReduces(steps[i], steps[i + 1]);
      steps.erase(steps.begin() + i + 1);
      stepAt.erase(stepAt.begin() + i + 1);
    }
    if (to != from)
      span(steps[i], from, to);
    int64_t chunk = columnChunk(steps[i]);
    bool outer = !chunk && splitsOuter(steps[i]);
    if (!chunk && !outer)
      continue;
    const Step whole = steps[i];
    int64_t parts = chunk ? whole.shape[0] / chunk : whole.shape[0];
    int partials = addBuffer(ElemType::F32,
                             {int64_t(whole.reductions.size()), parts, whole.shape[1]},
                             Buffer::Place::Arena, 0, chunk ? "column_partials" : "outer_partials");
    intervals.push_back({prog->buffers[partials].bytes(), from, to});
    intervalBuffer.push_back(partials);
    Step second;
    if (chunk)
      splitColumns(whole, chunk, partials, steps[i], second);
    else
      splitOuter(whole, partials, steps[i], second);
    steps.insert(steps.begin() + i + 1, std::move(second));
    stepAt.insert(stepAt.begin() + i + 1, stepAt[i]);
    ++i;
  }
}

void Lowering::markLowOnly() {
  std::vector<bool> read(prog->params.size(), false);
  for (const Step &s : prog->steps)
    for (int b : stepBuffers(s))
      if (prog->buffers[b].place == Buffer::Place::Param)
        read[prog->buffers[b].binding] = true;
  for (size_t p = 0; p < prog->params.size(); ++p) {
    TensorDesc &d = prog->params[p];
    d.lowOnly = training && d.lowType != ElemType::F32 && prog->gradIndex[p] < 0 && !d.assigned &&
                d.init == OTC_INIT_MODEL && !read[p];
  }
}

} // namespace otc
