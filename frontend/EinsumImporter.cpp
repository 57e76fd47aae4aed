// Einsum as the primitives exporters would have written: each operand's
// diagonals gathered and its private indices summed out, then the operands joined left to right, each
// pair one batched matmul over [batch, kept, contracted] views (transposes
// and reshapes around it), or a broadcast mul when nothing is contracted,
// then a transpose to the output's order. The gradients are those of
// transpose, reduce_sum, mul and matmul.
#include "Importers.h"

#include "otc/Dialect/OtcDialect.h"

#include <algorithm>

using namespace mlir;

namespace otc {

using Imp = GraphImporter;

namespace {

/// An operand with one index letter per dim.
struct Term {
  Value value;
  std::string letters;
};

ArrayRef<int64_t> dimsOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }

/// `t` with its dims reordered to `order` (a permutation of its letters).
FailureOr<Term> permuted(Imp &imp, Term t, const std::string &order) {
  if (order == t.letters)
    return t;
  SmallVector<int64_t> perm;
  for (char c : order)
    perm.push_back(int64_t(t.letters.find(c)));
  auto v = imp.create<TransposeOp>(t.value, imp.builder().getDenseI64ArrayAttr(perm));
  if (failed(v))
    return failure();
  return Term{*v, order};
}

/// `t` with the dims of the letters not in `keep` summed out.
FailureOr<Term> summedTo(Imp &imp, Term t, const std::string &keep) {
  SmallVector<int64_t> axes;
  std::string left;
  for (size_t i = 0; i < t.letters.size(); ++i) {
    if (keep.find(t.letters[i]) == std::string::npos)
      axes.push_back(int64_t(i));
    else
      left += t.letters[i];
  }
  if (axes.empty())
    return t;
  OpBuilder &b = imp.builder();
  auto v = imp.create<ReduceSumOp>(t.value, b.getDenseI64ArrayAttr(axes), b.getBoolAttr(false));
  if (failed(v))
    return failure();
  return Term{*v, left};
}

/// The '...' dims are spelled as control characters 1, 2, ... (right-
/// aligned, as numpy broadcasts), apart from the equation's letters.
char ellipsisDim(int64_t k) { return char(1 + k); }
bool isEllipsisDim(char c) { return c >= 1 && c < 32; }
/// How an error names index `c`.
std::string label(char c) {
  return isEllipsisDim(c) ? "... dim " + std::to_string(int(c)) : std::string(1, c);
}

/// `t` with each letter that repeats within it taken along its diagonal:
/// the two dims moved last and merged, then a gather at every (n + 1)-th
/// position.
FailureOr<Term> diagonals(Imp &imp, Term t) {
  for (size_t d = 0; d < t.letters.size(); ++d) {
    char c = t.letters[d];
    size_t again = t.letters.find(c, d + 1);
    if (again == std::string::npos)
      continue;
    int64_t n = dimsOf(t.value)[d];
    if (dimsOf(t.value)[again] != n)
      return imp.fail("index '" + label(c) + "' has extents " + std::to_string(n) +
                      " and " + std::to_string(dimsOf(t.value)[again]));
    // The other dims in order, then the pair: by position, since `rest`
    // may repeat letters of its own (diagonals still to take).
    std::string rest;
    SmallVector<int64_t> perm;
    for (size_t k = 0; k < t.letters.size(); ++k)
      if (k != d && k != again) {
        perm.push_back(int64_t(k));
        rest += t.letters[k];
      }
    perm.append({int64_t(d), int64_t(again)});
    auto moved = imp.create<TransposeOp>(t.value, imp.builder().getDenseI64ArrayAttr(perm));
    if (failed(moved))
      return failure();
    SmallVector<int64_t> merged(dimsOf(*moved).drop_back(2));
    merged.push_back(n * n);
    std::vector<int64_t> at;
    for (int64_t k = 0; k < n; ++k)
      at.push_back(k * (n + 1));
    auto v = gatherAt(imp, reshaped(imp, *moved, merged), int64_t(merged.size()) - 1, at);
    if (failed(v))
      return failure();
    return diagonals(imp, Term{*v, rest + c});
  }
  return t;
}

/// The letters of `s` that are also in `other` (in `s`'s order), or not.
std::string common(const std::string &s, const std::string &other, bool in) {
  std::string r;
  for (char c : s)
    if ((other.find(c) != std::string::npos) == in)
      r += c;
  return r;
}

/// a and b joined over their shared letters: those in `keep` are batch
/// dims, the others are contracted. One matmul of [B, M, K] by [B, K, N].
FailureOr<Term> joined(Imp &imp, Term a, Term b, const std::string &keep) {
  std::string shared = common(a.letters, b.letters, true);
  std::string batch = common(shared, keep, true), summed = common(shared, keep, false);
  std::string aOwn = common(a.letters, b.letters, false), bOwn = common(b.letters, a.letters, false);
  if (summed.empty()) {
    // Nothing contracted: a broadcast mul of a, in its own order, with b
    // laid out along a's letters (1 where b lacks one), then b's own.
    auto pb = permuted(imp, b, common(a.letters, b.letters, true) + bOwn);
    if (failed(pb))
      return failure();
    SmallVector<int64_t> sa(dimsOf(a.value)), sb;
    sa.append(bOwn.size(), 1);
    for (size_t d = 0; d < a.letters.size(); ++d)
      sb.push_back(b.letters.find(a.letters[d]) == std::string::npos ? 1 : dimsOf(a.value)[d]);
    sb.append(dimsOf(pb->value).end() - bOwn.size(), dimsOf(pb->value).end());
    auto v = imp.create<MulOp>(reshaped(imp, a.value, sa), reshaped(imp, pb->value, sb));
    if (failed(v))
      return failure();
    return Term{*v, a.letters + bOwn};
  }
  auto pa = permuted(imp, a, batch + aOwn + summed), pb = permuted(imp, b, batch + summed + bOwn);
  if (failed(pa) || failed(pb))
    return failure();
  ArrayRef<int64_t> da = dimsOf(pa->value), db = dimsOf(pb->value);
  size_t nb = batch.size(), na = aOwn.size(), nk = summed.size();
  int64_t B = product(da.take_front(nb)), M = product(da.slice(nb, na)), K = product(da.drop_front(nb + na));
  int64_t N = product(db.drop_front(nb + nk));
  SmallVector<int64_t> out(da.take_front(nb + na));
  out.append(db.begin() + nb + nk, db.end());
  auto product3 = imp.create<MatMulOp>(reshaped(imp, pa->value, {B, M, K}),
                                       reshaped(imp, pb->value, {B, K, N}));
  if (failed(product3))
    return failure();
  return Term{reshaped(imp, *product3, out), batch + aOwn + bOwn};
}

/// The equation's terms with "..." spelled out as capital letters (which
/// an equation cannot use), right-aligned over each operand's rank. Fails
/// naming what is wrong.
FailureOr<std::pair<std::vector<std::string>, std::string>>
parse(Imp &imp, std::string eq, const std::vector<int64_t> &ranks, int64_t &ellipsis) {
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow), rhs;
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  if (terms.size() != ranks.size())
    return imp.fail("the equation has " + std::to_string(terms.size()) + " operands for " +
                    std::to_string(ranks.size()) + " inputs");
  // How many dims each term's "..." stands for; the longest sets the
  // letters, right-aligned as numpy broadcasts.
  std::vector<int64_t> spans(terms.size(), 0);
  ellipsis = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const std::string &t = terms[i];
    size_t dots = t.find("...");
    for (size_t j = 0; j < t.size(); ++j)
      if (!std::isalpha(static_cast<unsigned char>(t[j])) &&
          !(dots != std::string::npos && j >= dots && j < dots + 3))
        return imp.fail("the equation may use only letters and one '...' per term");
    int64_t named = int64_t(t.size()) - (dots == std::string::npos ? 0 : 3);
    spans[i] = ranks[i] - named;
    if (dots == std::string::npos ? spans[i] != 0 : spans[i] < 0)
      return imp.fail("a term names " + std::to_string(named) + " dims of an input of rank " +
                      std::to_string(ranks[i]));
    ellipsis = std::max(ellipsis, spans[i]);
  }
  if (ellipsis > 26)
    return imp.fail("'...' stands for more than 26 dims");
  for (size_t i = 0; i < terms.size(); ++i) {
    size_t dots = terms[i].find("...");
    if (dots == std::string::npos)
      continue;
    std::string spelled;
    for (int64_t k = 0; k < spans[i]; ++k)
      spelled += ellipsisDim(ellipsis - spans[i] + k);
    terms[i].replace(dots, 3, spelled);
  }
  if (arrow != std::string::npos) {
    rhs = eq.substr(arrow + 2);
    size_t dots = rhs.find("...");
    std::string all;
    for (int64_t i = 0; i < ellipsis; ++i)
      all += ellipsisDim(i);
    if (dots != std::string::npos)
      rhs.replace(dots, 3, all);
    else if (ellipsis > 0)
      for (char c : all)
        for (const auto &t : terms)
          if (t.find(c) != std::string::npos && rhs.find(c) == std::string::npos)
            return imp.fail("the output must keep the '...' dims");
  } else {
    // Implicit output: the ellipsis, then the letters used once, in
    // character order (numpy's: upper case first).
    for (int64_t i = 0; i < ellipsis; ++i)
      rhs += ellipsisDim(i);
    std::string once;
    for (char c = 'A'; c <= 'z'; ++c) {
      if (!std::isalpha(static_cast<unsigned char>(c)))
        continue;
      int uses = 0;
      for (const auto &t : terms)
        uses += int(std::count(t.begin(), t.end(), c));
      if (uses == 1)
        once += c;
    }
    rhs += once;
  }
  return std::make_pair(terms, rhs);
}

} // namespace

LogicalResult importEinsum(Imp &imp) {
  const onnx::AttributeProto *eqAttr = imp.attr("equation");
  if (!eqAttr)
    return imp.fail("the equation attribute is missing");
  std::vector<Term> terms;
  std::vector<int64_t> ranks;
  for (size_t i = 0; i < imp.numInputs(); ++i) {
    auto v = imp.input(i);
    if (failed(v))
      return failure();
    if (!isa<FloatType>(getElementTypeOrSelf(v->getType())))
      return imp.fail("Einsum of integer tensors is not supported");
    terms.push_back({*v, ""});
    ranks.push_back(int64_t(dimsOf(*v).size()));
  }
  int64_t ellipsis = 0;
  if (eqAttr->s().size() > 200)
    return imp.fail("the equation is longer than 200 characters");
  auto parsed = parse(imp, eqAttr->s(), ranks, ellipsis);
  if (failed(parsed))
    return failure();
  // Not a structured binding: clang 14 cannot capture one in a lambda.
  const std::vector<std::string> &letters = parsed->first;
  const std::string &out = parsed->second;
  // Each letter's extent; '...' dims of extent 1 broadcast.
  std::map<char, int64_t> extent;
  for (size_t i = 0; i < terms.size(); ++i) {
    terms[i].letters = letters[i];
    auto diagonal = diagonals(imp, terms[i]);
    if (failed(diagonal))
      return failure();
    terms[i] = *diagonal;
    for (size_t d = 0; d < terms[i].letters.size(); ++d) {
      char c = terms[i].letters[d];
      int64_t n = dimsOf(terms[i].value)[d];
      auto [it, fresh] = extent.try_emplace(c, n);
      if (!fresh && it->second != n) {
        if (!isEllipsisDim(c) || (n != 1 && it->second != 1))
          return imp.fail("index '" + label(c) + "' has extents " +
                          std::to_string(it->second) + " and " + std::to_string(n));
        it->second = std::max(it->second, n);
      }
    }
  }
  for (char c : out)
    if (!extent.count(c))
      return imp.fail("output index '" + label(c) + "' names no input dim");
  for (Term &t : terms) {
    SmallVector<int64_t> want;
    for (char c : t.letters)
      want.push_back(extent[c]);
    if (ArrayRef<int64_t>(want) != dimsOf(t.value))
      t.value = BroadcastToOp::create(imp.builder(), imp.loc(), withShape(t.value, want), t.value);
  }
  // Join left to right, keeping what the output or a later operand reads.
  auto needed = [&](size_t from) {
    std::string keep = out;
    for (size_t j = from; j < terms.size(); ++j)
      keep += terms[j].letters;
    return keep;
  };
  auto acc = summedTo(imp, terms[0], needed(1));
  for (size_t i = 1; i < terms.size() && succeeded(acc); ++i) {
    auto next = summedTo(imp, terms[i], needed(i + 1) + acc->letters);
    acc = failed(next) ? next : joined(imp, *acc, *next, needed(i + 1));
    if (succeeded(acc))
      acc = summedTo(imp, *acc, needed(i + 1));
  }
  if (succeeded(acc))
    acc = permuted(imp, *acc, out);
  if (failed(acc))
    return failure();
  return imp.defineResult(acc->value);
}

} // namespace otc
