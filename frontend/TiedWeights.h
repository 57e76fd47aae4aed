// Weights that an exporter split in two, or merged: with constant folding on,
// torch.onnx.export stores a tied LM head (F.linear(h, wte.weight)) as a
// second initializer holding wte.weightᵀ. Trained apart, the two drift; otc
// joins them again before import.
#ifndef OTC_FRONTEND_TIEDWEIGHTS_H
#define OTC_FRONTEND_TIEDWEIGHTS_H

#include "WeightFiles.h"
#include "onnx/onnx_pb.h"
#include "llvm/ADT/StringSet.h"
#include <string>
#include <utility>
#include <vector>

namespace otc {

/// Replaces each float32 matrix initializer B that is exactly the transpose
/// of another initializer A by a Transpose node A -> B at the head of the
/// graph, so that both uses train A. A matrix of one repeated value (a
/// fresh zero or one initialisation) is never tied: equal values there say
/// nothing about the model. Returns one "B is A transposed" line per tie.
std::vector<std::string> tieTransposedCopies(onnx::ModelProto &model, TensorBytes &bytes);

/// A folded float32 matrix B ("onnx::..."), one of whose leading or
/// trailing blocks of whole rows or columns is exactly the transpose of
/// another initializer A: MobileBERT's LM head, cat([decoder.weightᵀ,
/// dense.weight]), the decoder tied to the word embeddings. B's readers
/// read Concat(Transpose(A), Slice(B)) instead, so the block trains as A
/// and the rest of B as the other parameter; B's block rows are left
/// unread (no gradient). Run after tieTransposedCopies. Returns one line
/// per block.
std::vector<std::string> tieTransposedBlocks(onnx::ModelProto &model, TensorBytes &bytes);

/// A folded float32 initializer F ("onnx::...") that is, bitwise, one
/// float32 operation of another initializer P and a scalar c (c - P, P + c,
/// P * c, P / c), perhaps reshaped: the export folded arithmetic on a
/// parameter that the graph also reads (RWKV's lerp x * p + y * (1 - p)).
/// Trained apart, P and F would take different steps; F's readers read the
/// operation on P instead. Uniform tensors are not matched (equal by
/// chance). Among equal sources, the one read nearest F's readers is taken;
/// where that is not one, F is left alone. Run after the transposed ties.
/// Returns one line per tie, and one starting "!" per F left alone.
std::vector<std::string> tieFoldedExpressions(onnx::ModelProto &model, TensorBytes &bytes);

/// The converse: in eval mode torch.onnx.export keeps one of several
/// parameters whose values are equal (fresh LayerNorm weights, zero biases)
/// and reads the others' names through Identity nodes. Each Identity of a
/// float initializer becomes an initializer of its own again, so the
/// parameters train apart, as in PyTorch. Returns (copy, source) pairs.
/// Anonymous folded copies read by one module called again (ALBERT's shared
/// layer, "dense" and "dense_1") stay merged: one parameter. So do those
/// both read in one call of one module, unless they hold one repeated
/// value: two parameters of a fresh constant initialisation (PoolFormer's
/// layer_scale_1 and layer_scale_2) are equal by chance. Copies of the
/// initializers in `keep` (PyTorch 2's listed buffers and constants, which
/// torch.export clones) stay Identity nodes: no parameter of their own.
/// With `parameters` (PyTorch 2's listed ones, which its exporter never
/// merges), only a copy named as one of them is untied: any other is an
/// alias torch.export made of the parameter itself (BLIP's full slice of
/// its position embeddings), which must train as it.
std::vector<std::pair<std::string, std::string>>
untieMergedCopies(onnx::ModelProto &model, TensorBytes &bytes,
                  const llvm::StringSet<> *keep = nullptr,
                  const llvm::StringSet<> *parameters = nullptr);

/// --tie KEEP=COPY: COPY leaves the initializers and its readers read KEEP,
/// through Identity, or Transpose where COPY holds KEEP's transpose (any
/// other values are an error: the two could not start as one tensor).
/// Returns "" or the error naming the tie.
std::string tieAsAsked(onnx::ModelProto &model,
                       const std::vector<std::pair<std::string, std::string>> &ties,
                       TensorBytes &bytes);

/// Pairs of float initializers of 2 or more dimensions holding equal values
/// (values read where they lie: `bytes`)
/// (not one repeated value), in the order met: the user may have meant one
/// parameter. Each later tensor pairs with the first equal one.
std::vector<std::pair<std::string, std::string>> equalInitializers(const onnx::ModelProto &model,
                                                                   TensorBytes &bytes);

} // namespace otc

#endif
