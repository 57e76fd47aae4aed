#include "NodeBuilder.h"

#include <cstring>

namespace otc {

int NodeBuilder::add(Node n) {
  uint64_t bits;
  std::memcpy(&bits, &n.value, sizeof bits);
  Key key{n.op, int(n.type), n.args, n.buffer, n.strides, bits, n.ivalue, n.extent, n.offset};
  auto [it, fresh] = memo.emplace(key, (int)step.nodes.size());
  if (fresh)
    step.nodes.push_back(std::move(n));
  return it->second;
}

int NodeBuilder::load(int buffer, ElemType storage, std::vector<int64_t> strides,
                      int64_t offset) {
  Node n{Node::Load, isFloat(storage) ? ElemType::F32 : storage};
  n.buffer = buffer;
  n.strides = std::move(strides);
  n.offset = offset;
  return add(std::move(n));
}

int NodeBuilder::gather(int buffer, ElemType storage, std::vector<int64_t> strides, int index,
                        int64_t stride, int64_t extent) {
  Node n{Node::Gather, isFloat(storage) ? ElemType::F32 : storage};
  n.buffer = buffer;
  n.strides = std::move(strides);
  n.args = {index};
  n.ivalue = stride;
  n.extent = extent;
  return add(std::move(n));
}

int NodeBuilder::constant(double v) {
  Node n{Node::Const, ElemType::F32};
  n.value = v;
  return add(std::move(n));
}

int NodeBuilder::integer(int64_t v, ElemType t) {
  Node n{Node::Const, t};
  n.ivalue = v;
  return add(std::move(n));
}

int NodeBuilder::seed() { return add(Node{Node::Seed, ElemType::F32}); }
int NodeBuilder::first() { return add(Node{Node::First, ElemType::I1}); }

int NodeBuilder::uniform(int64_t stream, std::vector<int64_t> strides) {
  Node n{Node::Uniform, ElemType::F32};
  n.ivalue = stream;
  n.strides = std::move(strides);
  return add(std::move(n));
}

int NodeBuilder::coord(int dim) {
  Node n{Node::Coord, ElemType::I64};
  n.ivalue = dim;
  return add(std::move(n));
}

int NodeBuilder::reduce(Reduction::Kind kind, int node) {
  step.reductions.push_back({kind, node});
  Node n{Node::Reduced, ElemType::F32};
  n.ivalue = (int64_t)step.reductions.size() - 1;
  return add(std::move(n)); // never shared: each reduction is new
}

int NodeBuilder::unary(Node::Op op, int a) {
  ElemType t = op == Node::ToF32 ? ElemType::F32
               : op == Node::ToI64 ? ElemType::I64 : step.nodes[a].type;
  Node n{op, t};
  n.args = {a};
  return add(std::move(n));
}

int NodeBuilder::roundTo(int a, ElemType storage) {
  Node::Op op = storage == ElemType::F16 ? Node::RoundF16 : Node::RoundBF16;
  if ((storage != ElemType::F16 && storage != ElemType::BF16) ||
      step.nodes[a].type != ElemType::F32 || step.nodes[a].op == op)
    return a;
  return unary(op, a);
}

int NodeBuilder::pow(int a, double exponent) {
  Node n{Node::Pow, ElemType::F32};
  n.args = {a};
  n.value = exponent;
  return add(std::move(n));
}

int NodeBuilder::binary(Node::Op op, int a, int b) {
  auto isOne = [&](int i) {
    const Node &n = step.nodes[i];
    return n.op == Node::Const && n.type == ElemType::F32 && n.value == 1.0;
  };
  if (op == Node::Mul && isOne(a)) // x * 1 is x exactly, NaN and signs included
    return b;
  if ((op == Node::Mul || op == Node::Div) && isOne(b))
    return a;
  bool compare = op == Node::Gt || op == Node::Eq || op == Node::Ne || op == Node::Lt ||
                 op == Node::Le || op == Node::Ge;
  Node n{op, compare ? ElemType::I1 : step.nodes[a].type};
  n.args = {a, b};
  return add(std::move(n));
}

int NodeBuilder::select(int cond, int a, int b) {
  Node n{Node::Select, step.nodes[a].type};
  n.args = {cond, a, b};
  return add(std::move(n));
}

void NodeBuilder::store(int buffer, std::vector<int64_t> strides, int node, int64_t offset) {
  step.stores.push_back({buffer, std::move(strides), node, offset});
}

} // namespace otc
