#include "model/block.h"

#include "kernels/step_gemm.h"
#include "layers/rmsnorm.h"
#include "layers/swiglu.h"

namespace rfa {
namespace {

// forward: out (N, OC) = inp (N, IC) · weightᵀ, weight (OC, IC)
template <typename T>
void linear_product(T* out, MatOperand<T> inp, MatOperand<T> weight, int64_t N, int IC, int OC) {
  mat_product<T>(false, true, N, OC, IC, inp, IC, weight, IC, T(0), out, OC);
}

// Its backward with a write for each output (overwriting saves zeroing a buffer first):
//   dinp (N, IC) (+)= dout · weight;  dweight (OC, IC) (+)= doutᵀ · inp
template <typename T>
void linear_grads(T* dinp, GradWrite dinp_write,  // (N, IC)
                  T* dweight, GradWrite dw_write,  // (OC, IC)
                  MatOperand<T> dout,              // (N, OC)
                  MatOperand<T> inp,               // (N, IC)
                  MatOperand<T> weight,            // (OC, IC)
                  int64_t N, int IC, int OC) {
  mat_product<T>(false, false, N, IC, OC, dout, OC, weight, IC, grad_beta<T>(dinp_write), dinp, IC);
  mat_product<T>(true, false, OC, IC, N, dout, OC, inp, IC, grad_beta<T>(dw_write), dweight, IC);
}

// The bf16 copies a block's products read: both the weights' and the activations',
// or neither (a bf16 model under float activations, e.g. a decoder's prefill, runs in float).
template <typename T>
BlockActsBf16 bf16_acts(const BlockContext<T>& ctx) {
  return ctx.ah && ctx.wh ? *ctx.ah : BlockActsBf16{};
}
template <typename T>
BlockWeightsBf16 bf16_weights(const BlockContext<T>& ctx) {
  return ctx.ah && ctx.wh ? *ctx.wh : BlockWeightsBf16{};
}

template <typename T>
AttentionCall<T> attention_call(const BlockContext<T>& ctx, BlockActs<T>& a) {
  AttentionCall<T> call;
  call.B = ctx.B;
  call.T_len = ctx.T_len;
  call.pos0 = ctx.pos0;
  call.row_pos0 = ctx.row_pos0;
  call.random = ctx.random;
  call.saved = a.attn_saved;
  call.scratch = ctx.attn_scratch;
  call.state_in = ctx.carry_in;
  call.state_out = ctx.carry_out;
  call.segment_start = ctx.segment_start;
  return call;
}

template <typename T>
AttentionInputs<T> attention_inputs(const BlockContext<T>& ctx, BlockActs<T>& a) {
  return AttentionInputs<T>{a.q, a.k, a.v, a.attn_norm, ctx.packed ? ctx.packed->gate : nullptr};
}

// out (N, OC) = inp (N, IC) · W, W stored (OC, IC) (trans) or (IC, OC): the packed copy's
// batch-invariant product when the context has one, else mat_product (bf16 where given).
template <typename T>
void forward_product(const BlockContext<T>& ctx, T* out, MatOperand<T> inp, MatOperand<T> weight, const T* packed,
                     bool trans, int64_t N, int IC, int OC) {
  if (ctx.packed) {
    step_gemm<T>(N, OC, IC, inp.x, packed, out, false, GemmThreads::pool);
  } else if (trans) {
    linear_product<T>(out, inp, weight, N, IC, OC);
  } else {
    mat_product<T>(false, false, N, OC, IC, inp, IC, weight, OC, T(0), out, OC);
  }
}

// The attention of a prefill in pieces (BlockContext::pieces): each piece as a one-row prefill
// of its own rows, so a piece's result does not depend on the pieces beside it.
template <typename T>
void attention_prefill_pieces(const BlockContext<T>& ctx, const BlockWeights<T>& w, BlockActs<T>& a) {
  const int64_t C = ctx.spec->C;
  for (int i = 0; i < ctx.n_pieces; ++i) {
    const PrefillPiece& p = ctx.pieces[i];
    AttentionCall<T> call = attention_call(ctx, a);
    call.B = 1;
    call.T_len = p.S;
    call.pos0 = p.pos;
    call.row_pos0 = &p.pos;
    AttentionInputs<T> in = attention_inputs(ctx, a);
    const int64_t at = p.offset * C;
    in.q += at;
    in.k += at;
    in.v += at;
    if (in.n) in.n += at;
    attention_prefill(*ctx.attention, w.attn, *ctx.state, p.state_row, a.attn_out + at, in, call);
  }
}

}  // namespace

template <typename T>
void block_forward(const BlockContext<T>& ctx, const BlockWeights<T>& w, BlockActs<T>& a, T* resid_out) {
  const ModelSpec& s = *ctx.spec;
  const int64_t N = int64_t(ctx.B) * ctx.T_len;
  const int C = s.C, Hf = s.Hf;
  if (ctx.resid_pending)  // x = x_prev_mid + W2_prev · act_prev, then n = RMSNorm(x)
    residual_rmsnorm_forward(a.attn_norm, a.attn_rstd, a.resid_in, ctx.resid_pending, w.attn_norm, N, C,
                             s.model.norm_eps);
  else
    rmsnorm_forward(a.attn_norm, a.attn_rstd, a.resid_in, w.attn_norm, N, C, s.model.norm_eps);
  const BlockActsBf16 h = bf16_acts(ctx);  // null copies: products in T
  const BlockWeightsBf16 wh = bf16_weights(ctx);
  const StepLayerWeights<T> p = ctx.packed ? *ctx.packed : StepLayerWeights<T>{};
  const MatOperand<T> n = mat_operand_bf16(a.attn_norm, h.attn_norm, N * C);
  if (ctx.packed) {  // q, k and v in one pass of the pool
    const StepProduct<T> qkv[] = {{p.wq, a.q}, {p.wk, a.k}, {p.wv, a.v}};
    step_gemm_group<T>(N, C, C, n.x, qkv, false, GemmThreads::pool);
  } else {
    forward_product<T>(ctx, a.q, n, {w.wq, wh.wq}, p.wq, true, N, C, C);
    forward_product<T>(ctx, a.k, n, {w.wk, wh.wk}, p.wk, true, N, C, C);
    forward_product<T>(ctx, a.v, n, {w.wv, wh.wv}, p.wv, true, N, C, C);
  }
  if (ctx.pieces)
    attention_prefill_pieces(ctx, w, a);
  else if (ctx.state)
    attention_prefill(*ctx.attention, w.attn, *ctx.state, ctx.state_row0, a.attn_out, attention_inputs(ctx, a),
                      attention_call(ctx, a));
  else
    attention_forward(*ctx.attention, w.attn, a.attn_out, attention_inputs(ctx, a), attention_call(ctx, a));
  // x_mid = x + Wo · attn_out
  // (the residual add fused into the FFN norm's row pass: one parallel region less)
  forward_product<T>(ctx, a.resid_mid, mat_operand_bf16(a.attn_out, h.attn_out, N * C), {w.wo, wh.wo}, p.wo, true, N,
                     C, C);
  residual_rmsnorm_forward(a.ffn_norm, a.ffn_rstd, a.resid_mid, a.resid_in, w.ffn_norm, N, C, s.model.norm_eps);
  forward_product<T>(ctx, a.ffn_gate_up, mat_operand_bf16(a.ffn_norm, h.ffn_norm, N * C), {w.w13, wh.w13}, p.w13,
                     true, N, C, 2 * Hf);
  swiglu_forward(a.ffn_act, a.ffn_gate_up, N, Hf);
  // x_out = x_mid + W2 · act; the caller's next norm adds x_mid (see block.h).
  // W2 is stored (Hf, C), input-major: resid_out (N, C) = act (N, Hf) · W2 (Hf, C)
  forward_product<T>(ctx, resid_out, mat_operand_bf16(a.ffn_act, h.ffn_act, N * Hf), {w.w2, wh.w2}, p.w2, false, N,
                     Hf, C);
}

template <typename T>
void block_backward(const BlockContext<T>& ctx, const BlockWeights<T>& w, const BlockWeights<T>& dw,
                    BlockActs<T>& a, GradScratch<T>& g) {
  const ModelSpec& s = *ctx.spec;
  const int64_t N = int64_t(ctx.B) * ctx.T_len;
  const int C = s.C, Hf = s.Hf;
  const GradWrite set = GradWrite::overwrite, add = GradWrite::accumulate, mw = ctx.write;  // mw: the matrices'
  // bf16: each gradient is copied into ctx.dout_bf16 before the products that read it;
  // the activations' copies are the forward's.
  const BlockActsBf16 h = bf16_acts(ctx);
  const BlockWeightsBf16 wh = bf16_weights(ctx);
  uint16_t* dh = h.attn_norm ? ctx.dout_bf16 : nullptr;
  // x_out = x_mid + W2 · act: d x_mid starts as d x_out (kept in g.dresid).
  // W2 (Hf, C): dact (N, Hf) = dresid (N, C) · W2ᵀ;  dW2 (Hf, C) (+)= actᵀ (Hf, N) · dresid (N, C)
  const MatOperand<T> dout = mat_operand_bf16(g.dresid, dh, N * C);
  mat_product<T>(false, true, N, Hf, C, dout, C, {w.w2, wh.w2}, C, T(0), g.dact, Hf);
  mat_product<T>(true, false, Hf, C, N, {a.ffn_act, h.ffn_act}, Hf, dout, C, grad_beta<T>(mw), dw.w2, C);
  swiglu_backward(g.dgate_up, g.dact, a.ffn_gate_up, N, Hf);
  linear_grads<T>(g.dnorm, set, dw.w13, mw, mat_operand_bf16(g.dgate_up, dh, N * 2 * Hf), {a.ffn_norm, h.ffn_norm},
                  {w.w13, wh.w13}, N, C, 2 * Hf);
  rmsnorm_backward(g.dresid, dw.ffn_norm, g.dnorm, a.resid_mid, w.ffn_norm, a.ffn_rstd, N, C);
  // x_mid = x + Wo · attn_out: g.dresid now holds d x_mid, which is also d x's residual part.
  linear_grads<T>(g.dattn_out, set, dw.wo, mw, mat_operand_bf16(g.dresid, dh, N * C), {a.attn_out, h.attn_out},
                  {w.wo, wh.wo}, N, C, C);
  // The attention overwrites dq, dk, dv (no zeroing: ~0.6 ms/step of memsets at the nano shape),
  // and dn when it reads n (the gate): then the projections add to it.
  const AttentionInputGrads<T> ag{g.dq, g.dk, g.dv, g.dnorm};
  attention_backward(*ctx.attention, w.attn, dw.attn, ag, g.dattn_out, a.attn_out, attention_inputs(ctx, a),
                     attention_call(ctx, a));
  const MatOperand<T> n{a.attn_norm, h.attn_norm};
  linear_grads<T>(g.dnorm, attention_reads_n(ctx.attention->spec()) ? add : set, dw.wq, mw, mat_operand_bf16(g.dq, dh, N * C), n,
                  {w.wq, wh.wq}, N, C, C);
  linear_grads<T>(g.dnorm, add, dw.wk, mw, mat_operand_bf16(g.dk, dh, N * C), n, {w.wk, wh.wk}, N, C, C);
  linear_grads<T>(g.dnorm, add, dw.wv, mw, mat_operand_bf16(g.dv, dh, N * C), n, {w.wv, wh.wv}, N, C, C);
  rmsnorm_backward(g.dresid, dw.attn_norm, g.dnorm, a.resid_in, w.attn_norm, a.attn_rstd, N, C);
}

template void block_forward(const BlockContext<float>&, const BlockWeights<float>&, BlockActs<float>&, float*);
template void block_forward(const BlockContext<double>&, const BlockWeights<double>&, BlockActs<double>&,
                            double*);
template void block_backward(const BlockContext<float>&, const BlockWeights<float>&, const BlockWeights<float>&,
                             BlockActs<float>&, GradScratch<float>&);
template void block_backward(const BlockContext<double>&, const BlockWeights<double>&,
                             const BlockWeights<double>&, BlockActs<double>&, GradScratch<double>&);

}  // namespace rfa
