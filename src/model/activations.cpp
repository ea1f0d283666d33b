#include "model/activations.h"

#include <algorithm>
#include <string>
#include <type_traits>

#include "core/parallel.h"
#include "attention/attention_core.h"
#include "kernels/gemm.h"

namespace rfa {

int64_t activation_gemm_partials(const ModelSpec& s, int B, int T_len, int threads) {
  const int64_t largest = std::max({int64_t(2) * s.Hf, int64_t(s.V), int64_t(s.C)}) * s.C;
  return gemm_partials_floats(largest, int64_t(B) * T_len, threads);
}

template <typename T>
Activations<T>::Activations(const ModelSpec& s, int B_, int T_, Precision precision, int threads)
    : B(B_), T_len(T_) {
  if (threads <= 0) threads = thread_count();
  RFA_ASSERT(precision == Precision::fp32 || (std::is_same_v<T, float>), "bf16 copies exist for float models only");
  if (B <= 0 || T_len <= 0) fail("batch {} x context {}: both must be positive", B, T_len);
  if (T_len > s.model.context_length)
    fail("sequence length {} exceeds model.context_length {}; shorten the input or raise the context",
         T_len, s.model.context_length);
  const int64_t N = int64_t(B) * T_len, C = s.C, V = s.V, Hf = s.Hf;
  ArenaPlan<T> plan;
  // Each buffer is recorded by name; offsets become pointers once the arena exists.
  struct Slot {
    T** ptr;
    int64_t offset;
  };
  std::vector<Slot> slots;
  auto take = [&](T** ptr, const std::string& name, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    int64_t offset = plan.take(n);
    slots.push_back({ptr, offset});
    if (!name.empty()) tensors_.push_back({name, offset, std::move(shape)});
  };
  layers.resize(static_cast<size_t>(s.L));
  for (int l = 0; l < s.L; ++l) {
    BlockActs<T>& a = layers[static_cast<size_t>(l)];
    const int64_t saved = attention_saved_size(s.attn[static_cast<size_t>(l)], B, T_len);
    std::string p = "layers." + std::to_string(l) + ".";
    take(&a.resid_in, p + "resid_in", {B, T_len, C});
    take(&a.attn_norm, p + "attn_norm", {B, T_len, C});
    take(&a.attn_rstd, p + "attn_rstd", {B, T_len});
    take(&a.q, p + "attn.q", {B, T_len, C});
    take(&a.k, p + "attn.k", {B, T_len, C});
    take(&a.v, p + "attn.v", {B, T_len, C});
    take(&a.attn_out, p + "attn.out", {B, T_len, C});
    take(&a.attn_saved, p + "attn.saved", {saved});
    take(&a.resid_mid, p + "resid_mid", {B, T_len, C});
    take(&a.ffn_norm, p + "ffn_norm", {B, T_len, C});
    take(&a.ffn_rstd, p + "ffn_rstd", {B, T_len});
    take(&a.ffn_gate_up, p + "ffn.gate_up", {B, T_len, 2 * Hf});
    take(&a.ffn_act, p + "ffn.act", {B, T_len, Hf});
  }
  take(&resid_final, "resid_final", {B, T_len, C});
  take(&final_norm, "final_norm", {B, T_len, C});
  take(&final_rstd, "final_rstd", {B, T_len});
  take(&logits, "logits", {B, T_len, V});
  take(&probs, "probs", {B, T_len, V});
  take(&losses, "losses", {B, T_len});
  // Gradient scratch: not dumped (it holds the last layer's values only).
  GradScratch<T>& g = grad;
  for (T** p : {&g.dresid, &g.dnorm, &g.dq, &g.dk, &g.dv, &g.dattn_out})
    take(p, "", {N, C});
  take(&g.dgate_up, "", {N, 2 * Hf});
  take(&g.dact, "", {N, Hf});
  take(&g.dlogits, "", {N, V});
  take(&g.dlosses, "", {N});
  for (const AttentionSpec& a : s.attn)  // one layer's attention at a time: the largest layer's
    attn_scratch_size_ = std::max(attn_scratch_size_, attention_scratch_size(a, B, T_len, threads));
  take(&g.attn_scratch, "", {attn_scratch_size_});
  if constexpr (std::is_same_v<T, float>) {
    g.gemm_partials_size = activation_gemm_partials(s, B, T_len, threads);
    take(&g.gemm_partials, "", {g.gemm_partials_size});
  }
  // bf16 copies: n uint16 in ceil(n / 2) floats (not dumped: they repeat the float tensors).
  struct HalfSlot {
    uint16_t** ptr;
    int64_t offset;
  };
  std::vector<HalfSlot> halves;
  auto take_half = [&](uint16_t** ptr, int64_t n) {
    halves.push_back({ptr, plan.take((n * int64_t(sizeof(uint16_t)) + int64_t(sizeof(T)) - 1) / int64_t(sizeof(T)))});
  };
  if (precision == Precision::bf16) {
    layers_bf16.resize(static_cast<size_t>(s.L));
    for (BlockActsBf16& h : layers_bf16) {
      take_half(&h.attn_norm, N * C);
      take_half(&h.attn_out, N * C);
      take_half(&h.ffn_norm, N * C);
      take_half(&h.ffn_act, N * Hf);
    }
    take_half(&final_norm_bf16, N * C);
    take_half(&dout_bf16, N * std::max({V, 2 * Hf, C}));
  }
  arena_ = Arena<T>(plan.size());
  for (const Slot& slot : slots) *slot.ptr = arena_.data() + slot.offset;
  for (const HalfSlot& slot : halves) *slot.ptr = reinterpret_cast<uint16_t*>(arena_.data() + slot.offset);
}

template class Activations<float>;
template class Activations<double>;

}  // namespace rfa
