#include "attention/softmax_attention.h"

#include <cmath>

#include "attention/attention_tasks.h"
#include "attention/vector_math.h"
#include "core/error.h"

namespace rfa {
namespace {

size_t per_thread_size(const AttentionDims& d) { return static_cast<size_t>(2 * d.Dh + 1) * d.T; }

void check_workspace(size_t size, const AttentionDims& d, int threads) {
  RFA_ASSERT(size >= softmax_attention_workspace_size(d, threads), "softmax workspace {} < {} for {} threads",
             size, softmax_attention_workspace_size(d, threads), threads);
}

// xt (Dh, T) = head h of x (T, C) for batch row b, transposed so that products
// over the key index run contiguously (axpy form, vectorised).
template <typename T>
void transpose_head(T* xt, const T* x, int T_, int C, int Dh) {
  for (int t = 0; t < T_; ++t)
    for (int e = 0; e < Dh; ++e) xt[static_cast<size_t>(e) * T_ + t] = x[static_cast<size_t>(t) * C + e];
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
  const int threads = thread_count();
  check_workspace(workspace.size, d, threads);
  const T scale = T(1) / std::sqrt(T(Dh));
  attention_tasks_run(int64_t(d.B) * H, workspace.data, per_thread_size(d), threads, [&](int64_t task, T* scratch) {
    const int b = static_cast<int>(task / H), h = static_cast<int>(task % H);
    const size_t head = static_cast<size_t>(b) * Tn * C + static_cast<size_t>(h) * Dh;
    T* kt = scratch;  // (Dh, T)
    transpose_head(kt, k + head, Tn, C, Dh);
    T* p_bh = probs + static_cast<size_t>(task) * Tn * Tn;  // (T, T)
    for (int i = 0; i < Tn; ++i) {
      const T* qi = q + head + static_cast<size_t>(i) * C;
      T* p = p_bh + static_cast<size_t>(i) * Tn;  // row i; only j <= i is attended
      for (int j = 0; j <= i; ++j) p[j] = 0;
      for (int e = 0; e < Dh; ++e) axpy(p, qi[e] * scale, kt + static_cast<size_t>(e) * Tn, i + 1);
      T max = p[0];
      for (int j = 1; j <= i; ++j) max = p[j] > max ? p[j] : max;
      for (int j = 0; j <= i; ++j) p[j] -= max;
      exp_row(p, i + 1);
      T sum = 0;
      for (int j = 0; j <= i; ++j) sum += p[j];
      const T inv = T(1) / sum;
      for (int j = 0; j <= i; ++j) p[j] *= inv;
      for (int j = i + 1; j < Tn; ++j) p[j] = 0;
      // out_i = sum_j p_ij v_j
      T* oi = out + head + static_cast<size_t>(i) * C;
      for (int e = 0; e < Dh; ++e) oi[e] = 0;
      for (int j = 0; j <= i; ++j) axpy(oi, p[j], v + head + static_cast<size_t>(j) * C, Dh);
    }
  });
}

template <typename T>
void softmax_attention_backward(T* dq, T* dk, T* dv, Workspace<T> workspace, const T* dout, const T* probs,
                                const T* q, const T* k, const T* v, const AttentionDims& d) {
  const int Tn = d.T, H = d.H, Dh = d.Dh, C = d.C();
  const int threads = thread_count();
  check_workspace(workspace.size, d, threads);
  const T scale = T(1) / std::sqrt(T(Dh));
  attention_tasks_run(int64_t(d.B) * H, workspace.data, per_thread_size(d), threads, [&](int64_t task, T* scratch) {
    const int b = static_cast<int>(task / H), h = static_cast<int>(task % H);
    const size_t head = static_cast<size_t>(b) * Tn * C + static_cast<size_t>(h) * Dh;
    T* vt = scratch;                                 // (Dh, T)
    T* ds = scratch + static_cast<size_t>(Dh) * Tn;  // (T): dp, then ds for row i
    transpose_head(vt, v + head, Tn, C, Dh);
    const T* p_bh = probs + static_cast<size_t>(task) * Tn * Tn;
    for (int i = 0; i < Tn; ++i) {
      const T* p = p_bh + static_cast<size_t>(i) * Tn;
      const T* doi = dout + head + static_cast<size_t>(i) * C;
      // out_i = sum_j p_ij v_j:  dv_j += p_ij dout_i,  dp_ij = dout_i · v_j
      for (int j = 0; j <= i; ++j) axpy(dv + head + static_cast<size_t>(j) * C, p[j], doi, Dh);
      for (int j = 0; j <= i; ++j) ds[j] = 0;
      for (int e = 0; e < Dh; ++e) axpy(ds, doi[e], vt + static_cast<size_t>(e) * Tn, i + 1);
      // p = softmax(s):  ds_j = p_j (dp_j - sum_l p_l dp_l)
      T pdp = 0;
      for (int j = 0; j <= i; ++j) pdp += p[j] * ds[j];
      for (int j = 0; j <= i; ++j) ds[j] = p[j] * (ds[j] - pdp) * scale;
      // s_ij = scale q_i · k_j:  dq_i += scale sum_j ds_ij k_j,  dk_j += scale ds_ij q_i
      T* dqi = dq + head + static_cast<size_t>(i) * C;
      const T* qi = q + head + static_cast<size_t>(i) * C;
      for (int j = 0; j <= i; ++j) {
        axpy(dqi, ds[j], k + head + static_cast<size_t>(j) * C, Dh);
        axpy(dk + head + static_cast<size_t>(j) * C, ds[j], qi, Dh);
      }
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
