#include "layers/linear.h"

#include "kernels/gemm.h"

namespace rfa {

template <typename T>
void linear_forward(T* out, const T* inp, const T* weight, int64_t N, int IC, int OC) {
  // out (N, OC) = inp (N, IC) @ weight^T (IC, OC)
  gemm<T>(false, true, N, OC, IC, T(1), inp, IC, weight, IC, T(0), out, OC);
}

template <typename T>
void linear_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, int64_t N, int IC,
                     int OC) {
  // forward: out = inp @ weight^T
  // dinp (N, IC) += dout (N, OC) @ weight (OC, IC)
  if (dinp != nullptr) gemm<T>(false, false, N, IC, OC, T(1), dout, OC, weight, IC, T(1), dinp, IC);
  // dweight (OC, IC) += dout^T (OC, N) @ inp (N, IC)
  gemm<T>(true, false, OC, IC, N, T(1), dout, OC, inp, IC, T(1), dweight, IC);
}

template void linear_forward<float>(float*, const float*, const float*, int64_t, int, int);
template void linear_forward<double>(double*, const double*, const double*, int64_t, int, int);
template void linear_backward<float>(float*, float*, const float*, const float*, const float*, int64_t, int, int);
template void linear_backward<double>(double*, double*, const double*, const double*, const double*, int64_t, int,
                                      int);

}  // namespace rfa
