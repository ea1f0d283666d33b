// Model construction, zero-grad, initialisation and the RFA random draws.

#include <algorithm>
#include <type_traits>

#include "core/parallel.h"
#include "core/step_profile.h"
#include "core/rng.h"
#include "kernels/bf16.h"
#include "model/model.h"
#include "tensor/fill_zero.h"

namespace rfa {

template <typename T>
Model<T>::Model(const ModelSpec& s, Precision p) : spec(s), table(model_param_table(s)), precision(p) {
  RFA_ASSERT(precision == Precision::fp32 || (std::is_same_v<T, float>), "bf16 copies exist for float models only");
  attention = attention_cores_make(spec.attn, spec.model.context_length);
  random_offsets_ = model_random_offsets(spec);
  random_size = random_offsets_.back();
  bf16_size_ = precision == Precision::bf16 ? table.size() : 0;
  // P uint16 take P / 2 elements of T (P is a multiple of 16: every tensor is 64-byte aligned).
  const int64_t bf16_elements = bf16_size_ * int64_t(sizeof(uint16_t)) / int64_t(sizeof(T));
  arena_ = Arena<T>(2 * table.size() + bf16_elements);
  random_ = Arena<T>(2 * random_size);
  w = model_weights_view(spec, table, params());
  g = model_weights_view(spec, table, grads());
  if (precision == Precision::bf16) {
    const uint16_t* base = bf16_params();
    auto at = [&](const T* weight) { return base + (weight - params()); };  // same offset as the float tensor
    wh.layers.resize(w.layers.size());
    for (size_t l = 0; l < w.layers.size(); ++l) {
      const BlockWeights<T>& b = w.layers[l];
      wh.layers[l] = {at(b.wq), at(b.wk), at(b.wv), at(b.wo), at(b.w13), at(b.w2)};
    }
    wh.lm_head = at(w.lm_head);
  }
}

template <typename T>
uint16_t* Model<T>::bf16_params() {
  return bf16_size_ ? reinterpret_cast<uint16_t*>(arena_.data() + 2 * table.size()) : nullptr;
}

template <typename T>
void Model<T>::bf16_refresh() {
  if constexpr (std::is_same_v<T, float>) {
    if (precision != Precision::bf16) return;
    matrices_check_kept("bf16_refresh");
    // The matrices a product reads: exactly the entries whose gradient a gemm writes
    // (the tied embedding is the LM head's matrix); norms and the attention's own stay float.
    for (const ParamEntry& e : table.entries())
      if (e.grad_by_gemm) bf16_from_float(bf16_params() + e.offset, params() + e.offset, e.numel);
  }
}

template <typename T>
void Model<T>::matrices_check_kept(const char* reader) const {
  RFA_ASSERT(!matrices_released_, "{} reads the model's weight matrices, which a decoder has packed and released",
             reader);
}

template <typename T>
void Model<T>::zero_grad() {
  fill_zero(grads(), table.size());
}

std::vector<int64_t> model_random_offsets(const ModelSpec& s) {
  std::vector<int64_t> offsets = {0};
  for (const AttentionSpec& a : s.attn) offsets.push_back(offsets.back() + attention_random_size(a));
  return offsets;
}

template <typename T>
void model_draw_random(const ModelSpec& s, uint64_t seed, uint64_t step, T* out) {
  // Layers are independent streams: draw them in parallel (no gemm inside). The offsets are
  // computed per layer, not looked up: this runs every step and must not allocate.
  int64_t total = 0;
  for (const AttentionSpec& a : s.attn) total += attention_random_size(a);
  if (total == 0) return;
  // Time only: its work is libm's log and sincos (Box-Muller in double) and Gram-Schmidt, neither
  // FMA- nor bandwidth-bound, so no roof applies.
  ProfileScope profile(ProfiledKernel::random_features, 0, 0);
  parallel_for(s.L, [&](int64_t l) {
    int64_t offset = 0;
    for (int64_t k = 0; k < l; ++k) offset += attention_random_size(s.attn[static_cast<size_t>(k)]);
    attention_random_draw(s.attn[static_cast<size_t>(l)], seed, step, static_cast<int>(l), out + offset);
  });
}

namespace {

// A normal tensor is drawn in parts of this many values (even: a part starts on a pair of normals,
// one Philox block) across the pool. Each value costs a block's share, a log, a sqrt and a sincos
// (about 35 ns: a 91M-parameter model's draws took 3.2 s of one thread, by perf), and every part
// draws exactly the values of one pass, so the weights do not depend on the thread count.
constexpr int64_t kInitPart = int64_t(1) << 16;

template <typename T>
void fill_normal(T* p, int64_t n, double std, const CounterRng& stream) {
  parallel_for((n + kInitPart - 1) / kInitPart, 1, [&](int64_t part) {
    const int64_t begin = part * kInitPart, end = std::min(n, begin + kInitPart);
    CounterRng rng = stream;
    rng.seek_block(static_cast<uint64_t>(begin / 2));
    for (int64_t j = begin; j < end; ++j) p[j] = static_cast<T>(rng.normal() * std);
  });
}

}  // namespace

template <typename T>
void model_init(Model<T>& m, uint64_t seed) {
  const ModelSpec& s = m.spec;
  const auto& entries = m.table.entries();
  for (size_t i = 0; i < entries.size(); ++i) {
    const ParamEntry& e = entries[i];
    T* p = m.params() + e.offset;
    switch (e.init.kind) {
      case ParamInit::Kind::constant:
        for (int64_t j = 0; j < e.numel; ++j) p[j] = static_cast<T>(e.init.value);
        break;
      case ParamInit::Kind::first_row:
        for (int64_t j = 0; j < e.numel; ++j) p[j] = static_cast<T>(j < e.init.row ? e.init.value : 0.0);
        break;
      case ParamInit::Kind::normal:
        fill_normal(p, e.numel, s.model.init_std * e.init.value, CounterRng(seed, 0x1417, i));
        break;
    }
  }
  if (m.random_size > 0) model_draw_random(s, seed, kFixedRandomStep, m.random_fixed());
}

template class Model<float>;
template class Model<double>;
template void model_init(Model<float>&, uint64_t);
template void model_init(Model<double>&, uint64_t);
template void model_draw_random(const ModelSpec&, uint64_t, uint64_t, float*);
template void model_draw_random(const ModelSpec&, uint64_t, uint64_t, double*);

}  // namespace rfa
