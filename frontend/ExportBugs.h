// Known exporter bugs that leave a valid graph computing something other
// than the module: otc trains what the graph says, and warns.
#ifndef OTC_FRONTEND_EXPORTBUGS_H
#define OTC_FRONTEND_EXPORTBUGS_H

#include "onnx/onnx_pb.h"
#include <string>

namespace otc {

/// torch.onnx before 2.0 exports padding_mode="circular" (nn.ConvNd,
/// F.pad(mode="circular")) one element off: the wrap-around before the data
/// is x[-(p+1):-1] where PyTorch reads x[-p:]. Finds Concat(Slice(x,
/// -(p+1), -1), x, ...) along the slice's axis in the main graph, where x
/// is no Concat (PyTorch 1.9's two steps, right first, read the same and
/// are right). One line naming the first such node, or "".
std::string offByOneCircularPadding(const onnx::GraphProto &g);

} // namespace otc

#endif
