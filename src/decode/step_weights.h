#pragma once
// The decode step's weight matrices, packed once per decoder for the batch-invariant step
// products (kernels/step_gemm.h): wq, wk, wv, wo, w13, w2, the output gate's W_g where the layer
// has one, and lm_head. A copy, about the model's size again (step_weights_elements): the packed
// panels read each weight row as one contiguous run, where the stored (N, K) layout would need
// horizontal sums (AVX2: 2.2x slower at 64 rows) and (K, N) rows thrash L1's sets. Taken from the
// model's weights at construction: weights changed later are not seen. A decoder that is the
// model's last reader gives the model's pages under them back (`release` below,
// DecoderOptions::release_model_matrices).
#include <cstdint>
#include <functional>
#include <vector>

#include "attention/attention_core.h"
#include "model/model_params.h"
#include "model/model_spec.h"
#include "tensor/arena.h"

namespace rfa {

// What to pack: every matrix, or only the output gates' (a bf16 decoder's other products read
// the bf16 copies, packed for oneDNN).
enum class StepPack { all, gates };

// The out (N, K) shape of each matrix packed, in packing order (N * K: its source's elements).
struct StepMatrixShape {
  int64_t N = 0, K = 0;
};
std::vector<StepMatrixShape> step_matrix_shapes(const ModelSpec& spec, StepPack what);

// Elements the packed copy takes (the memory estimate's).
int64_t step_weights_elements(const ModelSpec& spec, StepPack what);

template <typename T>
class StepWeights {
 public:
  StepWeights() = default;
  // Gives back the pages of `granule` bytes (0: the base page) wholly inside a packed source matrix.
  using Release = std::function<void(const T* source, int64_t count, size_t granule)>;
  // cores: the layers' (their output gate's parameter index). release, if given, is called for each
  // source matrix twice: from its packing thread once its copy is complete, for the whole huge pages
  // inside it, and after every copy is complete, for the rest. A base page released while a
  // neighbouring matrix was still being packed split the huge page they share, and the packing of
  // what was left of it ran on 4 KiB pages (12 x 768, Zen 5: 0.05 s more to start a generation).
  StepWeights(const ModelSpec& spec, const ModelWeights<T>& w, const std::vector<AttentionCore>& cores, StepPack what,
              const Release& release = {});
  bool empty() const { return layers_.empty(); }
  int64_t elements() const { return arena_.size(); }
  const StepLayerWeights<T>& layer(int l) const { return layers_[static_cast<size_t>(l)]; }
  const T* lm_head() const { return lm_head_; }  // null for StepPack::gates
  bool packs_all() const { return lm_head_ != nullptr; }  // StepPack::all: every product can read the copies

 private:
  Arena<T> arena_;
  std::vector<StepLayerWeights<T>> layers_;  // (L)
  const T* lm_head_ = nullptr;
};

}  // namespace rfa
