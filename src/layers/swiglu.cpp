#include "layers/swiglu.h"

#include "core/parallel.h"
#include "core/step_profile.h"
#include "kernels/fast_exp.h"
#include "kernels/vector_math.h"

namespace rfa {

namespace {

// Row kernels take plain pointers (see rmsnorm.cpp: captures read inside the
// OpenMP body can defeat vectorisation).
template <typename T>
void forward_row(T* y, const T* gate, const T* up, int Hf) {
  RFA_OMP_SIMD_FULL  // (kernels/simd.h; y never overlaps gate or up)
  for (int i = 0; i < Hf; ++i) {
    T g = gate[i];
    T s = T(1) / (T(1) + exp_of(-g));  // sigmoid(g)
    y[i] = g * s * up[i];
  }
}

template <typename T>
void backward_row(T* dgate, T* dup, const T* dy, const T* gate, const T* up, int Hf) {
  // forward: y = g s(g) u, s = sigmoid
  // dy/du = g s;  dy/dg = u (s + g s (1 - s))
  RFA_OMP_SIMD_FULL  // (the outputs never overlap the inputs)
  for (int i = 0; i < Hf; ++i) {
    T g = gate[i];
    T s = T(1) / (T(1) + exp_of(-g));
    dgate[i] = dy[i] * up[i] * s * (T(1) + g * (T(1) - s));
    dup[i] = dy[i] * g * s;
  }
}

}  // namespace

template <typename T>
void swiglu_forward(T* out, const T* gate_up, int64_t N, int Hf) {
  // reads gate_up (2 N Hf), writes out (N Hf)
  ProfileScope profile(ProfiledKernel::swiglu, 0, sizeof(T) * 3.0 * double(N) * Hf);
  parallel_for(N, [&](int64_t n) {
    const T* gate = gate_up + n * 2 * Hf;
    forward_row(out + n * Hf, gate, gate + Hf, Hf);
  });
}

template <typename T>
void swiglu_backward(T* dgate_up, const T* dout, const T* gate_up, int64_t N, int Hf) {
  // reads dout (N Hf) and gate_up (2 N Hf), writes dgate_up (2 N Hf)
  ProfileScope profile(ProfiledKernel::swiglu, 0, sizeof(T) * 5.0 * double(N) * Hf);
  parallel_for(N, [&](int64_t n) {
    const T* gate = gate_up + n * 2 * Hf;
    T* dgate = dgate_up + n * 2 * Hf;
    backward_row(dgate, dgate + Hf, dout + n * Hf, gate, gate + Hf, Hf);
  });
}

template void swiglu_forward<float>(float*, const float*, int64_t, int);
template void swiglu_forward<double>(double*, const double*, int64_t, int);
template void swiglu_backward<float>(float*, const float*, const float*, int64_t, int);
template void swiglu_backward<double>(double*, const double*, const double*, int64_t, int);

}  // namespace rfa
