#include "layers/swiglu.h"

#include "core/parallel.h"
#include "kernels/fast_exp.h"

namespace rfa {

template <typename T>
void swiglu_forward(T* out, const T* gate_up, int64_t N, int Hf) {
  parallel_for(N, [&](int64_t n) {
    const T* gate = gate_up + n * 2 * Hf;
    const T* up = gate + Hf;
    T* y = out + n * Hf;
    for (int i = 0; i < Hf; ++i) {
      T g = gate[i];
      T s = T(1) / (T(1) + exp_of(-g));  // sigmoid(g)
      y[i] = g * s * up[i];
    }
  });
}

template <typename T>
void swiglu_backward(T* dgate_up, const T* dout, const T* gate_up, int64_t N, int Hf) {
  // forward: y = g s(g) u, s = sigmoid
  // dy/du = g s;  dy/dg = u (s + g s (1 - s))
  parallel_for(N, [&](int64_t n) {
    const T* gate = gate_up + n * 2 * Hf;
    const T* up = gate + Hf;
    const T* dy = dout + n * Hf;
    T* dgate = dgate_up + n * 2 * Hf;
    T* dup = dgate + Hf;
    for (int i = 0; i < Hf; ++i) {
      T g = gate[i];
      T s = T(1) / (T(1) + exp_of(-g));
      dgate[i] += dy[i] * up[i] * s * (T(1) + g * (T(1) - s));
      dup[i] += dy[i] * g * s;
    }
  });
}

template void swiglu_forward<float>(float*, const float*, int64_t, int);
template void swiglu_forward<double>(double*, const double*, int64_t, int);
template void swiglu_backward<float>(float*, const float*, const float*, int64_t, int);
template void swiglu_backward<double>(double*, const double*, const double*, int64_t, int);

}  // namespace rfa
