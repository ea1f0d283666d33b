#include "decode/step_weights.h"

#include "core/parallel.h"
#include "kernels/step_gemm.h"
#include "tensor/huge_pages.h"

namespace rfa {
namespace {

// One matrix to pack: out (N, K) product's weight, stored (N, K) (trans) or (K, N).
template <typename T>
struct PackJob {
  const T** slot;
  const T* weight;
  bool trans;
  int64_t N, K;
  int64_t offset = 0;
};

template <typename T>
std::vector<PackJob<T>> pack_jobs(const ModelSpec& s, const ModelWeights<T>& w, const std::vector<AttentionCore>& cores,
                                  StepPack what, std::vector<StepLayerWeights<T>>& layers, const T** lm_head) {
  const int64_t C = s.C, Hf = s.Hf;
  std::vector<PackJob<T>> jobs;
  for (int l = 0; l < s.L; ++l) {
    const BlockWeights<T>& b = w.layers[static_cast<size_t>(l)];
    StepLayerWeights<T>& p = layers[static_cast<size_t>(l)];
    if (what == StepPack::all) {
      jobs.push_back({&p.wq, b.wq, true, C, C});
      jobs.push_back({&p.wk, b.wk, true, C, C});
      jobs.push_back({&p.wv, b.wv, true, C, C});
      jobs.push_back({&p.wo, b.wo, true, C, C});
      jobs.push_back({&p.w13, b.w13, true, 2 * Hf, C});
      jobs.push_back({&p.w2, b.w2, false, C, Hf});  // W2 (Hf, C) input-major
    }
    if (s.attn[static_cast<size_t>(l)].output_gate)
      jobs.push_back({&p.gate, b.attn[cores[static_cast<size_t>(l)].gate_param() + 1], true, C, C});
  }
  if (what == StepPack::all) jobs.push_back({lm_head, w.lm_head, true, s.V, C});
  return jobs;
}

}  // namespace

std::vector<StepMatrixShape> step_matrix_shapes(const ModelSpec& s, StepPack what) {
  const int64_t C = s.C, Hf = s.Hf;
  std::vector<StepMatrixShape> shapes;
  for (const AttentionSpec& a : s.attn) {
    if (what == StepPack::all)  // wq, wk, wv, wo, w13, w2
      for (StepMatrixShape m : {StepMatrixShape{C, C}, {C, C}, {C, C}, {C, C}, {2 * Hf, C}, {C, Hf}}) shapes.push_back(m);
    if (a.output_gate) shapes.push_back({C, C});
  }
  if (what == StepPack::all) shapes.push_back({s.V, C});
  return shapes;
}

int64_t step_weights_elements(const ModelSpec& s, StepPack what) {
  int64_t n = 0;
  for (const StepMatrixShape& m : step_matrix_shapes(s, what)) n += arena_round<float>(step_packed_size<float>(m.N, m.K));
  return n;
}

template <typename T>
StepWeights<T>::StepWeights(const ModelSpec& s, const ModelWeights<T>& w, const std::vector<AttentionCore>& cores,
                            StepPack what, const Release& release)
    : layers_(static_cast<size_t>(s.L)) {
  std::vector<PackJob<T>> jobs = pack_jobs(s, w, cores, what, layers_, &lm_head_);
  int64_t size = 0;
  for (PackJob<T>& j : jobs) {
    j.offset = size;
    size += arena_round<T>(step_packed_size<T>(j.N, j.K));
  }
  arena_ = Arena<T>(size);
  parallel_for(static_cast<int64_t>(jobs.size()), [&](int64_t i) {
    const PackJob<T>& j = jobs[static_cast<size_t>(i)];
    step_pack<T>(j.trans, j.N, j.K, j.weight, arena_.data() + j.offset);
    if (release) release(j.weight, j.N * j.K, kHugePageBytes);
  });
  if (release)
    for (const PackJob<T>& j : jobs) release(j.weight, j.N * j.K, 0);
  for (const PackJob<T>& j : jobs) *j.slot = arena_.data() + j.offset;
}

template class StepWeights<float>;
template class StepWeights<double>;

}  // namespace rfa
