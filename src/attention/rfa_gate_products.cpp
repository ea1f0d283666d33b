#include "attention/rfa_gate_products.h"

#include "core/parallel.h"
#include "kernels/gemm.h"
#include "kernels/vector_math.h"

namespace rfa {

template <typename T>
void rfa_gate_preact(T* a, const T* n, const T* gate_w, const T* gate_b, int64_t rows, int HW, int C) {
  gemm(false, true, rows, HW, C, T(1), n, C, gate_w, C, T(0), a, HW);
  parallel_for(rows, parallel_grain(HW), [&](int64_t r) {
    T* ar = a + r * HW;
#pragma omp simd
    for (int x = 0; x < HW; ++x) ar[x] += gate_b[x];
  });
}

template <typename T>
void rfa_gate_param_grads(T* dn, T* dgate_w, T* dgate_b, const T* da, const T* n, const T* gate_w, int64_t rows,
                          int HW, int C) {
  // a = n gate_wᵀ + gate_b:  dn = da gate_w,  dgate_w += daᵀ n,  dgate_b += sum over rows of da
  if (dn) gemm(false, false, rows, C, int64_t(HW), T(1), da, int64_t(HW), gate_w, C, T(0), dn, C);
  gemm(true, false, int64_t(HW), C, rows, T(1), da, int64_t(HW), n, C, T(1), dgate_w, C);
  for (int64_t r = 0; r < rows; ++r) axpy(dgate_b, T(1), da + r * HW, HW);
}

template void rfa_gate_preact<float>(float*, const float*, const float*, const float*, int64_t, int, int);
template void rfa_gate_preact<double>(double*, const double*, const double*, const double*, int64_t, int, int);
template void rfa_gate_param_grads<float>(float*, float*, float*, const float*, const float*, const float*, int64_t,
                                          int, int);
template void rfa_gate_param_grads<double>(double*, double*, double*, const double*, const double*, const double*,
                                           int64_t, int, int);

}  // namespace rfa
