#include "attention/softmax_attention.h"

#include <algorithm>
#include <cmath>

#include "attention/attention_tasks.h"
#include "kernels/vector_math.h"
#include "core/error.h"

namespace rfa {
namespace {

// Per-thread scratch: one transposed head (Dh, pad16(T)), three padded heads
// (T, pad16(Dh)) and three (T, T) matrices (backward; the forward uses less).
size_t per_thread_size(const AttentionDims& d) {
  const size_t T = d.T, TP = pad16(d.T), DP = pad16(d.Dh);
  return d.Dh * TP + 3 * T * DP + 3 * T * T;
}

void check_workspace(size_t size, const AttentionDims& d, int threads) {
  RFA_ASSERT(size >= softmax_attention_workspace_size(d, threads), "softmax workspace {} < {} for {} threads",
             size, softmax_attention_workspace_size(d, threads), threads);
}

// xt (Dh, ld) = head h of x (T, C) for one batch row, transposed.
template <typename T>
void head_transposed(T* xt, size_t ld, const T* x, int T_, int C, int Dh) {
  for (int t = 0; t < T_; ++t)
    for (int e = 0; e < Dh; ++e) xt[e * ld + t] = x[static_cast<size_t>(t) * C + e];
}

// xp (T, ld) = head h of x (T, C) for one batch row, rows padded.
template <typename T>
void head_padded(T* xp, size_t ld, const T* x, int T_, int C, int Dh) {
  for (int t = 0; t < T_; ++t) std::copy_n(x + static_cast<size_t>(t) * C, Dh, xp + t * ld);
}

}  // namespace

size_t softmax_attention_saved_size(const AttentionDims& d) {
  return static_cast<size_t>(d.B) * d.H * d.T * d.T;
}

size_t softmax_attention_workspace_size(const AttentionDims& d, int threads) {
  return static_cast<size_t>(threads) * per_thread_size(d);
}

template <typename T>
void softmax_attention_forward(T* out, T* probs, Workspace<T> workspace, const T* q, const T* k, const T* v,
                               const AttentionDims& d) {
  const int Tn = d.T, H = d.H, Dh = d.Dh, C = d.C();
  const size_t TP = pad16(Tn), DP = pad16(Dh);
  const int threads = thread_count();
  check_workspace(workspace.size, d, threads);
  const T scale = T(1) / std::sqrt(T(Dh));
  attention_tasks_run(int64_t(d.B) * H, workspace.data, per_thread_size(d), threads, [&](int64_t task, T* scratch) {
    const int b = static_cast<int>(task / H), h = static_cast<int>(task % H);
    const size_t head = static_cast<size_t>(b) * Tn * C + static_cast<size_t>(h) * Dh;
    T* kt = scratch;             // (Dh, TP) keys transposed
    T* vp = kt + Dh * TP;        // (T, DP)  values
    head_transposed(kt, TP, k + head, Tn, C, Dh);
    head_padded(vp, DP, v + head, Tn, C, Dh);
    T* p_bh = probs + static_cast<size_t>(task) * Tn * Tn;  // (T, T)
    for (int i = 0; i < Tn; ++i) {
      T* p = p_bh + static_cast<size_t>(i) * Tn;  // row i; only j <= i is attended
      // s_ij = q_i·k_j / sqrt(Dh);  p_i = softmax(s_i)
      vecmat(p, q + head + static_cast<size_t>(i) * C, kt, Dh, i + 1, TP, scale, false);
      T max = p[0];
      for (int j = 1; j <= i; ++j) max = p[j] > max ? p[j] : max;
      for (int j = 0; j <= i; ++j) p[j] -= max;
      exp_row(p, i + 1);
      T sum = 0;
      for (int j = 0; j <= i; ++j) sum += p[j];
      const T inv = T(1) / sum;
      for (int j = 0; j <= i; ++j) p[j] *= inv;
      std::fill(p + i + 1, p + Tn, T(0));
      // out_i = sum_j p_ij v_j
      vecmat(out + head + static_cast<size_t>(i) * C, p, vp, i + 1, Dh, DP, T(1), false);
    }
  });
}

template <typename T>
void softmax_attention_backward(T* dq, T* dk, T* dv, Workspace<T> workspace, const T* dout, const T* probs,
                                const T* q, const T* k, const T* v, const AttentionDims& d) {
  const int Tn = d.T, H = d.H, Dh = d.Dh, C = d.C();
  const size_t TP = pad16(Tn), DP = pad16(Dh), TT = static_cast<size_t>(Tn) * Tn;
  const int threads = thread_count();
  check_workspace(workspace.size, d, threads);
  const T scale = T(1) / std::sqrt(T(Dh));
  attention_tasks_run(int64_t(d.B) * H, workspace.data, per_thread_size(d), threads, [&](int64_t task, T* scratch) {
    const int b = static_cast<int>(task / H), h = static_cast<int>(task % H);
    const size_t head = static_cast<size_t>(b) * Tn * C + static_cast<size_t>(h) * Dh;
    T* vt = scratch;              // (Dh, TP) values transposed
    T* kp = vt + Dh * TP;         // (T, DP)  keys
    T* qp = kp + Tn * DP;         // (T, DP)  queries
    T* dop = qp + Tn * DP;        // (T, DP)  dout
    T* ds = dop + Tn * DP;        // (T, T)   d scores, lower
    T* dsT = ds + TT;             // (T, T)   transposed, upper
    T* pT = dsT + TT;             // (T, T)   probs transposed, upper
    head_transposed(vt, TP, v + head, Tn, C, Dh);
    head_padded(kp, DP, k + head, Tn, C, Dh);
    head_padded(qp, DP, q + head, Tn, C, Dh);
    head_padded(dop, DP, dout + head, Tn, C, Dh);
    const T* p_bh = probs + static_cast<size_t>(task) * TT;
    for (int i = 0; i < Tn; ++i) {
      const T* p = p_bh + static_cast<size_t>(i) * Tn;
      T* dsi = ds + static_cast<size_t>(i) * Tn;
      // out_i = sum_j p_ij v_j:  dp_ij = dout_i · v_j
      vecmat(dsi, dop + i * DP, vt, Dh, i + 1, TP, T(1), false);
      // p = softmax(s):  ds_j = p_j (dp_j - sum_l p_l dp_l)
      T pdp = 0;
      for (int j = 0; j <= i; ++j) pdp += p[j] * dsi[j];
      for (int j = 0; j <= i; ++j) dsi[j] = p[j] * (dsi[j] - pdp);
      for (int j = 0; j <= i; ++j) dsT[static_cast<size_t>(j) * Tn + i] = dsi[j], pT[static_cast<size_t>(j) * Tn + i] = p[j];
      // s_ij = scale q_i·k_j:  dq_i = scale sum_j ds_ij k_j (each row written once: overwrite)
      vecmat(dq + head + static_cast<size_t>(i) * C, dsi, kp, i + 1, Dh, DP, scale, false);
    }
    for (int j = 0; j < Tn; ++j) {
      const size_t at = static_cast<size_t>(j) * Tn + j;
      // dk_j = scale sum_{i>=j} ds_ij q_i;  dv_j = sum_{i>=j} p_ij dout_i
      vecmat(dk + head + static_cast<size_t>(j) * C, dsT + at, qp + j * DP, Tn - j, Dh, DP, scale, false);
      vecmat(dv + head + static_cast<size_t>(j) * C, pT + at, dop + j * DP, Tn - j, Dh, DP, T(1), false);
    }
  });
}

#define RFA_INSTANTIATE(T)                                                                                    \
  template void softmax_attention_forward<T>(T*, T*, Workspace<T>, const T*, const T*, const T*,             \
                                             const AttentionDims&);                                          \
  template void softmax_attention_backward<T>(T*, T*, T*, Workspace<T>, const T*, const T*, const T*,        \
                                              const T*, const T*, const AttentionDims&);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
