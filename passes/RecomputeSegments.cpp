// The segments otc-recompute's blocks, sqrt and budget policies recompute
// whole: repeated blocks by node name, and runs of the forward's layers
// between its articulation values.
#include "RecomputePlan.h"
#include "otc/Dialect/Helpers.h"
#include "otc/Passes/Passes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Regex.h"

#include <cmath>
#include <set>

using namespace mlir;

namespace otc {

namespace {

/// The ONNX node name the importer put on an op (through fused locations).
std::string nodeName(Location loc) {
  if (auto n = dyn_cast<NameLoc>(loc))
    return n.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      if (std::string s = nodeName(l); !s.empty())
        return s;
  return "";
}

/// PyTorch's scopes of repeated modules: siblings named base + index
/// (`blocks.0`, `blocks.1`; `layer1`, `layer2`) that each hold at least
/// two nodes. The family with the most members wins, the shallowest on a
/// tie. Returns each op's block (by first appearance) and the family.
std::string repeatedScopes(const Forward &f, llvm::DenseMap<Operation *, int> &seg) {
  struct Family {
    int depth;
    // scope path, the ONNX nodes in it (in order of appearance)
    std::vector<std::pair<std::string, std::set<std::string>>> members;
    void add(const std::string &scope, const std::string &node) {
      for (auto &m : members)
        if (m.first == scope)
          return void(m.second.insert(node));
      members.push_back({scope, {node}});
    }
  };
  std::vector<std::pair<std::string, Family>> families; // in order of appearance
  auto family = [&](const std::string &key) -> Family & {
    for (auto &f : families)
      if (f.first == key)
        return f.second;
    families.push_back({key, {}});
    return families.back().second;
  };
  std::vector<std::string> names;
  for (Operation *op : f.ops)
    names.push_back(nodeName(op->getLoc()));
  for (const std::string &name : names) {
    SmallVector<StringRef> parts;
    StringRef(name).split(parts, '/', -1, /*KeepEmpty=*/false);
    std::string parent;
    for (size_t d = 0; d + 1 < parts.size(); ++d) {
      StringRef scope = parts[d];
      StringRef base = scope.rtrim("0123456789");
      if (base.size() < scope.size() && !base.empty()) {
        Family &fam = family(parent + "/" + base.str());
        fam.depth = (int)d;
        fam.add(parent + "/" + scope.str() + "/", name);
      }
      parent += "/" + scope.str();
    }
  }
  const Family *best = nullptr;
  std::string bestKey;
  for (auto &[key, fam] : families) {
    if (fam.members.size() < 2 ||
        llvm::any_of(fam.members, [](auto &m) { return m.second.size() < 2; }))
      continue;
    if (!best || fam.members.size() > best->members.size() ||
        (fam.members.size() == best->members.size() && fam.depth < best->depth))
      best = &fam, bestKey = key;
  }
  if (!best)
    return "";
  for (size_t p = 0; p < f.ops.size(); ++p) {
    std::string path = "/" + StringRef(names[p]).ltrim('/').str();
    for (size_t i = 0; i < best->members.size(); ++i)
      if (StringRef(path).starts_with(best->members[i].first))
        seg[f.ops[p]] = (int)i;
  }
  return bestKey + "N/ (" + std::to_string(best->members.size()) + " blocks)";
}

/// The forward split at its articulation values: a layer ends where one
/// data-dependent value alone is live into the rest of the forward.
struct Layers {
  SmallVector<int> ends;        // each layer's last op (the last: the forward's)
  SmallVector<int64_t> carried; // bytes of the value live after each end
};

Layers layers(const Forward &f) {
  const int n = (int)f.ops.size();
  std::vector<int> count(n + 1, 0);
  std::vector<int64_t> bytes(n + 1, 0); // summed: the value's bytes where count is 1
  for (int p = 0; p < n; ++p)
    for (Value v : f.ops[p]->getResults()) {
      if (!f.dataDependent.contains(v))
        continue;
      int last = p;
      for (Operation *u : v.getUsers())
        if (f.contains(u))
          last = std::max(last, f.position.lookup(u));
      count[p] += 1, count[last] -= 1; // live over the cuts p .. last - 1
      bytes[p] += valueBytes(v), bytes[last] -= valueBytes(v);
    }
  Layers out;
  int live = 0;
  int64_t liveBytes = 0;
  for (int p = 0; p + 1 < n; ++p) {
    live += count[p], liveBytes += bytes[p];
    if (live == 1)
      out.ends.push_back(p), out.carried.push_back(liveBytes);
  }
  out.ends.push_back(n - 1);
  out.carried.push_back(0);
  return out;
}

/// Per layer: the bytes `none` keeps of its values; the bytes `selective`
/// keeps of them, but for the value the layer hands on; the FLOPs of its
/// ops that selective does not recompute.
struct LayerBytes {
  int64_t none = 0, selective = 0, flops = 0;
};

SmallVector<LayerBytes> layerBytes(const Forward &f, const Layers &l) {
  SmallVector<LayerBytes> out(l.ends.size());
  llvm::DenseMap<Operation *, int> noSegments;
  KeepRule selectiveRule(f, noSegments);
  llvm::DenseSet<Value> selective = checkpoints(f, selectiveRule);
  size_t layer = 0;
  for (int p = 0; p < (int)f.ops.size(); ++p) {
    while (p > l.ends[layer])
      ++layer;
    Operation *op = f.ops[p];
    if (!isCheap(op))
      out[layer].flops += opFlops(op);
    for (Value v : op->getResults()) {
      if (f.backwardRead.contains(v) && !f.mustKeep(v))
        out[layer].none += valueBytes(v);
      bool handedOn = p == l.ends[layer] && layer + 1 < l.ends.size();
      if (selective.contains(v) && !f.mustKeep(v) && !handedOn)
        out[layer].selective += valueBytes(v);
    }
  }
  return out;
}

/// Ops of layers [first, last] into segment `id`.
void assign(const Forward &f, ArrayRef<int> ends, int first, int last, int id,
            llvm::DenseMap<Operation *, int> &seg) {
  for (int p = first ? ends[first - 1] + 1 : 0; p <= ends[last]; ++p)
    seg[f.ops[p]] = id;
}

} // namespace

LogicalResult segmentBlocks(const Forward &f, func::FuncOp func, StringRef boundary,
                            llvm::DenseMap<Operation *, int> &seg, std::string &summary) {
  if (boundary.empty()) {
    std::string family = repeatedScopes(f, seg);
    if (family.empty())
      return func.emitError("recompute blocks: no repeated blocks in the node names (scopes "
                            "such as /blocks.0/, /blocks.1/); name them with a boundary regex");
    summary = "blocks: " + family;
    return success();
  }
  llvm::Regex re(boundary);
  std::string why;
  if (!re.isValid(why))
    return func.emitError("recompute blocks: bad boundary regex '") << boundary << "': " << why;
  llvm::StringMap<int> ids;
  for (Operation *op : f.ops) {
    SmallVector<StringRef> match;
    std::string name = nodeName(op->getLoc());
    if (name.empty() || !re.match(name, &match))
      continue;
    if (match[0].empty())
      return func.emitError("recompute blocks: the boundary regex '")
             << boundary << "' matches an empty string in '" << name
             << "'; it must match the block's name prefix, e.g. ^/blocks\\.[0-9]+/";
    seg[op] = ids.try_emplace(match[0], (int)ids.size()).first->second;
  }
  if (ids.empty())
    return func.emitError("recompute blocks: the boundary regex '")
           << boundary << "' matches no node name";
  summary = "blocks: " + std::to_string(ids.size()) + " blocks matching '" + boundary.str() + "'";
  return success();
}

void segmentSqrt(const Forward &f, llvm::DenseMap<Operation *, int> &seg, std::string &summary) {
  Layers l = layers(f);
  SmallVector<int> &ends = l.ends;
  SmallVector<LayerBytes> bytes = layerBytes(f, l);
  const int m = (int)ends.size();
  const int s = (int)std::ceil(std::sqrt(double(m)));
  // Segment j ends after about j/s of the bytes `none` keeps: at the layer
  // whose carried value is smallest among those whose running total lies
  // within half a segment of that (the checkpoint is what is kept).
  int64_t total = 0;
  SmallVector<int64_t> running;
  for (const LayerBytes &b : bytes)
    running.push_back((total += b.none));
  int first = 0, segments = 0;
  for (int j = 1; j < s && first < m - 1; ++j) {
    double target = double(total) * j / s, half = double(total) / (2.0 * s);
    int end = -1;
    for (int i = first; i < m - 1; ++i) {
      double off = std::fabs(double(running[i]) - target);
      if (off > half && !(end < 0 && running[i] > target))
        continue; // outside the window (unless nothing lies in it)
      if (end < 0 || l.carried[i] < l.carried[end] ||
          (l.carried[i] == l.carried[end] &&
           off < std::fabs(double(running[end]) - target)))
        end = i;
      if (running[i] > target + half)
        break;
    }
    if (end < 0)
      break;
    assign(f, ends, first, end, segments++, seg);
    first = end + 1;
  }
  summary = "sqrt: " + std::to_string(m) + " layers, " + std::to_string(segments) +
            " recomputed segments and a selective last one";
}

void segmentBudget(const Forward &f, int64_t count, llvm::DenseMap<Operation *, int> &seg,
                   std::string &summary, int64_t &candidates) {
  Layers l = layers(f);
  SmallVector<int> &ends = l.ends;
  SmallVector<LayerBytes> bytes = layerBytes(f, l);
  // Layers that free bytes beyond selective's, most bytes per recomputed
  // FLOP first (a layer of free ops first of all); ties, earlier first.
  // Not the last layer: the backward reads it at once, so recomputing it
  // frees nothing.
  SmallVector<int> order;
  for (int i = 0; i + 1 < (int)ends.size(); ++i)
    if (bytes[i].selective > 0)
      order.push_back(i);
  llvm::stable_sort(order, [&](int a, int b) {
    // a's bytes/flops > b's, without dividing by zero.
    return (__int128)bytes[a].selective * bytes[b].flops >
           (__int128)bytes[b].selective * bytes[a].flops;
  });
  candidates = (int64_t)order.size();
  int64_t chosen = std::min<int64_t>(count, candidates);
  for (int64_t i = 0; i < chosen; ++i)
    assign(f, ends, order[i], order[i], order[i], seg);
  summary = chosen ? "budget: selective and " + std::to_string(chosen) + " of " +
                        std::to_string(candidates) + " layers recomputed whole"
                 : "budget: selective";
}

} // namespace otc
