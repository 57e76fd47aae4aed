// PyTorch names of anonymous initializers, and the --freeze pattern match
// (ParameterNames.h).
#include "ParameterNames.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"

namespace otc {

bool globMatch(llvm::StringRef pattern, llvm::StringRef name) {
  size_t star = pattern.find('*');
  if (star == llvm::StringRef::npos)
    return pattern == name;
  if (!name.starts_with(pattern.take_front(star)))
    return false;
  llvm::StringRef rest = pattern.drop_front(star + 1);
  name = name.drop_front(star);
  // '*' takes every possible length; the patterns are a few characters.
  for (size_t skip = 0; skip <= name.size(); ++skip)
    if (globMatch(rest, name.drop_front(skip)))
      return true;
  return false;
}

namespace {

/// "/model/layers.0/mlp/up_proj/MatMul" -> "model.layers.0.mlp.up_proj";
/// "" for a node name that is not such a path.
std::string modulePath(llvm::StringRef nodeName) {
  if (!nodeName.consume_front("/"))
    return "";
  size_t last = nodeName.rfind('/');
  if (last == llvm::StringRef::npos || last == 0)
    return "";
  std::string path = nodeName.take_front(last).str();
  for (char &c : path)
    if (c == '/')
      c = '.';
  return path;
}

} // namespace

llvm::StringMap<std::string> exportedNames(const onnx::GraphProto &g) {
  struct Uses {
    std::string path;
    bool onePath = true, allWeights = true;
  };
  llvm::StringMap<Uses> uses;
  for (const auto &init : g.initializer())
    if (llvm::StringRef(init.name()).starts_with("onnx::"))
      uses[init.name()];
  for (const auto &n : g.node())
    for (int i = 0; i < n.input_size(); ++i) {
      auto it = uses.find(n.input(i));
      if (it == uses.end())
        continue;
      Uses &u = it->second;
      std::string path = modulePath(n.name());
      if (path.empty() || (!u.path.empty() && u.path != path))
        u.onePath = false;
      u.path = path;
      u.allWeights &= i == 1 && (n.op_type() == "MatMul" || n.op_type() == "Gemm");
    }
  llvm::StringMap<std::string> names;
  for (const auto &[init, u] : uses)
    if (u.onePath && !u.path.empty())
      names[init] = u.allWeights ? u.path + ".weight" : u.path;
  return names;
}

llvm::StringMap<std::string> readerModules(const onnx::GraphProto &g) {
  llvm::StringMap<std::string> paths;
  llvm::StringSet<> mixed; // read from more than one module, or from none
  for (const auto &n : g.node()) {
    if (n.op_type() == "Identity")
      continue;
    std::string here = modulePath(n.name());
    for (const std::string &in : n.input()) {
      auto [it, fresh] = paths.try_emplace(in, here);
      if (here.empty() || (!fresh && it->second != here))
        mixed.insert(in);
    }
  }
  for (const auto &m : mixed)
    paths[m.getKey()] = "";
  return paths;
}

std::string readerModule(const onnx::GraphProto &g, llvm::StringRef name) {
  return readerModules(g).lookup(name);
}

bool sameModuleCalledAgain(llvm::StringRef a, llvm::StringRef b) {
  if (a.empty() || a == b)
    return !a.empty();
  llvm::SmallVector<llvm::StringRef> as, bs;
  a.split(as, '.');
  b.split(bs, '.');
  if (as.size() != bs.size())
    return false;
  // "dense_1" is "dense" called again: the longer one is the shorter, "_"
  // and digits.
  auto again = [](llvm::StringRef longer, llvm::StringRef shorter) {
    return longer.consume_front(shorter) && longer.consume_front("_") && !longer.empty() &&
           llvm::all_of(longer, [](char c) { return c >= '0' && c <= '9'; });
  };
  for (size_t i = 0; i < as.size(); ++i)
    if (as[i] != bs[i] && !again(as[i], bs[i]) && !again(bs[i], as[i]))
      return false;
  return true;
}

} // namespace otc
