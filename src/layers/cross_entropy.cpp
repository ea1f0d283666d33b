#include "layers/cross_entropy.h"

#include <cmath>

#include "core/error.h"
#include "core/parallel.h"
#include "core/step_profile.h"
#include "kernels/fast_exp.h"
#include "kernels/vector_math.h"

namespace rfa {

namespace {

// Row kernels take plain pointers (see rmsnorm.cpp: captures read inside the
// OpenMP body can defeat vectorisation). Returns -log p_target, or 0 when ignored.
template <typename T>
T forward_row(T* p, const T* z, int32_t target, int V) {
  // softmax(z) = exp(z - m) / sum exp(z - m), m = max z, so every exp <= 1.
  T m = row_max(z, V);
  T sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int v = 0; v < V; ++v) {
    T e = exp_of(z[v] - m);
    p[v] = e;
    sum += e;
  }
  T inv = T(1) / sum;
  for (int v = 0; v < V; ++v) p[v] *= inv;
  // -log p_t = log(sum) - (z_t - m); avoids log of an underflowed p_t.
  return target < 0 ? T(0) : std::log(sum) - (z[target] - m);
}

template <typename T>
void backward_row(T* dz, const T* p, int32_t target, T dl, int V) {
  // forward: loss = -log softmax(z)_t  =>  dloss/dz_v = p_v - [v == t]
  if (target < 0) {  // ignored row: no gradient
    for (int v = 0; v < V; ++v) dz[v] = T(0);
    return;
  }
  for (int v = 0; v < V; ++v) dz[v] = dl * p[v];
  dz[target] -= dl;
}

}  // namespace

template <typename T>
void cross_entropy_forward(T* losses, T* probs, const T* logits, const int32_t* targets, int64_t N, int V) {
  // reads logits, writes probs: 2 N V elements
  ProfileScope profile(ProfiledKernel::cross_entropy, 0, sizeof(T) * 2.0 * double(N) * V);
  // Checked before the parallel loop: an exception must not escape an OpenMP region.
  for (int64_t n = 0; n < N; ++n)
    RFA_ASSERT(targets[n] < V, "cross_entropy: target {} at row {} is not below the vocab size {}", targets[n], n,
               V);
  parallel_for(N, [&](int64_t n) { losses[n] = forward_row(probs + n * V, logits + n * V, targets[n], V); });
}

template <typename T>
void cross_entropy_backward(T* dlogits, const T* probs, const int32_t* targets, const T* dlosses, int64_t N,
                            int V) {
  // reads probs, writes dlogits: 2 N V elements
  ProfileScope profile(ProfiledKernel::cross_entropy, 0, sizeof(T) * 2.0 * double(N) * V);
  parallel_for(N, [&](int64_t n) { backward_row(dlogits + n * V, probs + n * V, targets[n], dlosses[n], V); });
}

template void cross_entropy_forward<float>(float*, float*, const float*, const int32_t*, int64_t, int);
template void cross_entropy_forward<double>(double*, double*, const double*, const int32_t*, int64_t, int);
template void cross_entropy_backward<float>(float*, const float*, const int32_t*, const float*, int64_t, int);
template void cross_entropy_backward<double>(double*, const double*, const int32_t*, const double*, int64_t, int);

}  // namespace rfa
