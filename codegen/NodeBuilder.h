// Builds a step's expression DAG. Identical nodes are made once (hash
// consing), so a value used twice is one SSA local in the emitted kernel.
#ifndef OTC_CODEGEN_NODEBUILDER_H
#define OTC_CODEGEN_NODEBUILDER_H

#include "Program.h"

#include <map>
#include <tuple>

namespace otc {

class NodeBuilder {
public:
  explicit NodeBuilder(Step &step) : step(step) {}

  int load(int buffer, ElemType storage, std::vector<int64_t> strides, int64_t offset = 0);
  /// A load whose index along one dim of `buffer` is the I64 node `index`.
  int gather(int buffer, ElemType storage, std::vector<int64_t> strides, int index,
             int64_t stride, int64_t extent);
  int constant(double v);
  int integer(int64_t v, ElemType t = ElemType::I64);
  int seed();
  int first();
  /// Dropout's draw for the element at `strides` . coords, of `stream`.
  int uniform(int64_t stream, std::vector<int64_t> strides);
  int coord(int dim);
  /// Adds a reduction of `node` and returns the node holding its result.
  int reduce(Reduction::Kind kind, int node);
  int unary(Node::Op op, int a);
  /// The F32 node `a` rounded to `storage` when that is F16 or BF16 (and
  /// not already rounded); `a` itself otherwise.
  int roundTo(int a, ElemType storage);
  int pow(int a, double exponent);
  int binary(Node::Op op, int a, int b);
  int select(int cond, int a, int b);
  void store(int buffer, std::vector<int64_t> strides, int node, int64_t offset = 0);

  Step &getStep() { return step; }
  /// The lowering's memo: the node of each (value, dim map) built so far.
  std::map<std::pair<const void *, std::vector<int>>, int> values;

private:
  int add(Node n);
  Step &step;
  // Constants by their bits: NaN must not equal every number, nor -0.0 0.0.
  using Key = std::tuple<int, int, std::vector<int>, int, std::vector<int64_t>,
                         uint64_t, int64_t, int64_t, int64_t>;
  std::map<Key, int> memo;
};

} // namespace otc

#endif
