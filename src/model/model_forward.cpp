#include "model/model_forward.h"

#include <cstring>
#include <type_traits>

#include "kernels/gemm.h"
#include "layers/cross_entropy.h"
#include "layers/embedding.h"
#include "layers/rmsnorm.h"
#include "model/block.h"

namespace rfa {
namespace {

template <typename T>
BlockContext<T> block_context(Model<T>& m, Activations<T>& a, const T* random, int l) {
  BlockContext<T> ctx;
  ctx.spec = &m.spec;
  ctx.attention = &m.attention[static_cast<size_t>(l)];
  ctx.random = random ? random + m.random_offset(l) : nullptr;
  ctx.attn_scratch = Workspace<T>{a.grad.attn_scratch, static_cast<size_t>(a.attn_scratch_size())};
  ctx.B = a.B;
  ctx.T_len = a.T_len;
  ctx.pos0 = a.pos0;
  ctx.segment_start = a.segment_start;
  if (a.bf16() && m.precision == Precision::bf16) {  // both sides have their copies
    ctx.wh = &m.wh.layers[static_cast<size_t>(l)];
    ctx.ah = &a.layers_bf16[static_cast<size_t>(l)];
    ctx.dout_bf16 = a.dout_bf16;
  }
  return ctx;
}

template <typename T>
T* block_output(Activations<T>& a, int l) {
  return l + 1 < static_cast<int>(a.layers.size()) ? a.layers[static_cast<size_t>(l) + 1].resid_in
                                                   : a.resid_final;
}

// Zeroes the gradients that model_backward only adds into, whatever the write:
// every table entry not marked grad_by_gemm (the norms, the attention's own
// tensors, an untied embedding's scatter-add). The others are left to the
// gemms' beta 0.
template <typename T>
void grads_zero_accumulated(Model<T>& m, T* grads) {
  for (const ParamEntry& e : m.table.entries())
    if (!e.grad_by_gemm) std::memset(grads + e.offset, 0, sizeof(T) * static_cast<size_t>(e.numel));
}

}  // namespace

void model_check_tokens(const ModelSpec& s, const int32_t* inputs, int64_t N) {
  for (int64_t i = 0; i < N; ++i)
    if (inputs[i] < 0 || inputs[i] >= s.V)
      fail("token id {} at position {} is outside the vocabulary [0, {}); the token data and the model disagree",
           inputs[i], i, s.V);
}

template <typename T>
double model_forward(Model<T>& m, Activations<T>& a, const int32_t* inputs, const int32_t* targets,
                     std::type_identity_t<const T*> random, const ModelCarry<T>& carry) {
  const ModelSpec& s = m.spec;
  const int64_t N = int64_t(a.B) * a.T_len;
  RFA_ASSERT(m.random_size == 0 || random != nullptr, "the attention needs its random matrices");
  m.matrices_check_kept("model_forward");
  model_check_tokens(s, inputs, N);
  a.pos0 = carry.pos0;
  a.segment_start = carry.segment_start;
  embedding_forward(a.layers[0].resid_in, inputs, m.w.tok_embedding, N, s.C);
  // Each block leaves its output without x_mid; the next norm pass adds it (block.h).
  const T* pending = nullptr;  // (B, T, C)
  int64_t carry_layer = 0;     // where layer l's carried state starts: the layers before it, one after another
  for (int l = 0; l < s.L; ++l) {
    BlockContext<T> ctx = block_context(m, a, random, l);
    ctx.resid_pending = pending;
    if (carry.in) ctx.carry_in = carry.in + carry_layer;
    if (carry.out) ctx.carry_out = carry.out + carry_layer;
    carry_layer += attention_carry_size(s.attn[static_cast<size_t>(l)], a.B);
    block_forward(ctx, m.w.layers[static_cast<size_t>(l)], a.layers[static_cast<size_t>(l)], block_output(a, l));
    pending = a.layers[static_cast<size_t>(l)].resid_mid;
  }
  if (pending)
    residual_rmsnorm_forward(a.final_norm, a.final_rstd, a.resid_final, pending, m.w.final_norm, N, s.C,
                             s.model.norm_eps);
  else
    rmsnorm_forward(a.final_norm, a.final_rstd, a.resid_final, m.w.final_norm, N, s.C, s.model.norm_eps);
  // logits (N, V) = final_norm (N, C) · lm_headᵀ
  const bool bf16 = a.bf16() && m.precision == Precision::bf16;
  mat_product<T>(false, true, N, s.V, s.C, mat_operand_bf16(a.final_norm, bf16 ? a.final_norm_bf16 : nullptr, N * s.C),
                 s.C, {m.w.lm_head, bf16 ? m.wh.lm_head : nullptr}, s.C, T(0), a.logits, s.V);
  if (!targets) return 0.0;
  cross_entropy_forward(a.losses, a.probs, a.logits, targets, N, s.V);
  double sum = 0;
  int64_t count = 0;
  for (int64_t i = 0; i < N; ++i)
    if (targets[i] >= 0) {
      sum += static_cast<double>(a.losses[i]);
      ++count;
    }
  return count > 0 ? sum / static_cast<double>(count) : 0.0;
}

namespace {

// The backward from the cross-entropy down, once g.dlosses (N) holds d(loss)/d(losses[i]).
// GradScratch's partials for gemm<float> (the double model's products are the reference: none).
template <typename T>
float* gemm_partials_of(GradScratch<T>& g) {
  if constexpr (std::is_same_v<T, float>) return g.gemm_partials;
  return nullptr;
}

template <typename T>
void backward_from_losses(Model<T>& m, Activations<T>& a, GradTarget<T> target, const int32_t* inputs,
                          const int32_t* targets, const T* random, GradWrite write) {
  const ModelWeights<T>& mg = *target.views;
  const ModelSpec& s = m.spec;
  const int64_t N = int64_t(a.B) * a.T_len;
  GradScratch<T>& g = a.grad;
  // The weight gradients' products may sum each thread's tokens apart (kernels/gemm.h).
  const GemmPartialsScope partials(gemm_partials_of(g), g.gemm_partials_size);
  const bool overwrite = write == GradWrite::overwrite;
  // Overwrite: the weight matrices' gemms write with beta 0 (lm_head first, so a
  // tied embedding's scatter-add at the end adds onto it); the rest are zeroed here.
  if (overwrite) grads_zero_accumulated(m, target.base);
  cross_entropy_backward(g.dlogits, a.probs, targets, g.dlosses, N, s.V);
  // logits = final_norm · lm_headᵀ (bf16: dlogits, the head and final_norm through their copies)
  const bool bf16 = a.bf16() && m.precision == Precision::bf16;
  const MatOperand<T> dlogits = mat_operand_bf16(g.dlogits, bf16 ? a.dout_bf16 : nullptr, N * s.V);
  const MatOperand<T> head{m.w.lm_head, bf16 ? m.wh.lm_head : nullptr};
  const MatOperand<T> norm{a.final_norm, bf16 ? a.final_norm_bf16 : nullptr};
  mat_product<T>(false, false, N, s.C, s.V, dlogits, s.V, head, s.C, T(0), g.dnorm, s.C);  // dnorm = dlogits · W
  mat_product<T>(true, false, s.V, s.C, N, dlogits, s.V, norm, s.C, overwrite ? T(0) : T(1), mg.lm_head,
                 s.C);  // dW (+)= dlogitsᵀ · n
  rmsnorm_backward(g.dresid, mg.final_norm, g.dnorm, a.resid_final, m.w.final_norm, a.final_rstd, N, s.C,
                   GradWrite::overwrite);
  for (int l = s.L - 1; l >= 0; --l) {
    BlockContext<T> ctx = block_context(m, a, random, l);
    ctx.write = write;
    block_backward(ctx, m.w.layers[static_cast<size_t>(l)], mg.layers[static_cast<size_t>(l)],
                   a.layers[static_cast<size_t>(l)], g);
  }
  embedding_backward(mg.tok_embedding, g.dresid, inputs, N, s.C);
}

}  // namespace

template <typename T>
void model_backward_into(Model<T>& m, Activations<T>& a, GradTarget<T> target, const int32_t* inputs,
                         const int32_t* targets, std::type_identity_t<const T*> random, T dloss, GradWrite write) {
  const int64_t N = int64_t(a.B) * a.T_len;
  for (int64_t i = 0; i < N; ++i) a.grad.dlosses[i] = targets[i] >= 0 ? dloss : T(0);
  backward_from_losses(m, a, target, inputs, targets, random, write);
}

template <typename T>
void model_backward(Model<T>& m, Activations<T>& a, const int32_t* inputs, const int32_t* targets,
                    std::type_identity_t<const T*> random, double loss_scale, GradWrite write) {
  const int64_t N = int64_t(a.B) * a.T_len;
  int64_t count = 0;
  for (int64_t i = 0; i < N; ++i) count += targets[i] >= 0;
  // loss = (loss_scale / count) * sum_i losses[i]
  const T dloss = count > 0 ? static_cast<T>(loss_scale / static_cast<double>(count)) : T(0);
  model_backward_into(m, a, GradTarget<T>{m.grads(), &m.g}, inputs, targets, random, dloss, write);
}

template <typename T>
void model_backward_weighted(Model<T>& m, Activations<T>& a, const int32_t* inputs, const int32_t* targets,
                             std::type_identity_t<const T*> random, const double* weights, GradWrite write) {
  const int64_t N = int64_t(a.B) * a.T_len;
  // loss = sum_i weights[i] * losses[i]
  for (int64_t i = 0; i < N; ++i) a.grad.dlosses[i] = targets[i] >= 0 ? static_cast<T>(weights[i]) : T(0);
  backward_from_losses(m, a, {m.grads(), &m.g}, inputs, targets, random, write);
}


template double model_forward(Model<float>&, Activations<float>&, const int32_t*, const int32_t*, const float*,
                              const ModelCarry<float>&);
template double model_forward(Model<double>&, Activations<double>&, const int32_t*, const int32_t*,
                              const double*, const ModelCarry<double>&);
template void model_backward(Model<float>&, Activations<float>&, const int32_t*, const int32_t*, const float*,
                             double, GradWrite);
template void model_backward(Model<double>&, Activations<double>&, const int32_t*, const int32_t*,
                             const double*, double, GradWrite);
template void model_backward_weighted(Model<float>&, Activations<float>&, const int32_t*, const int32_t*, const float*,
                                      const double*, GradWrite);
template void model_backward_weighted(Model<double>&, Activations<double>&, const int32_t*, const int32_t*,
                                      const double*, const double*, GradWrite);
template void model_backward_into(Model<float>&, Activations<float>&, GradTarget<float>, const int32_t*,
                                  const int32_t*, const float*, float, GradWrite);
template void model_backward_into(Model<double>&, Activations<double>&, GradTarget<double>, const int32_t*,
                                  const int32_t*, const double*, double, GradWrite);

}  // namespace rfa
