#pragma once
// Linear layer without bias, weight stored (OC, IC) like PyTorch:
//   out = inp @ weight^T
#include <cstdint>

namespace rfa {

template <typename T>
void linear_forward(T* out,          // (N, OC)
                    const T* inp,     // (N, IC)
                    const T* weight,  // (OC, IC)
                    int64_t N, int IC, int OC);

// dinp += dout @ weight ; dweight += dout^T @ inp. dinp may be nullptr (e.g. the
// first layer's input needs no gradient).
template <typename T>
void linear_backward(T* dinp,          // (N, IC) += , or nullptr
                     T* dweight,       // (OC, IC) +=
                     const T* dout,    // (N, OC)
                     const T* inp,     // (N, IC)
                     const T* weight,  // (OC, IC)
                     int64_t N, int IC, int OC);

}  // namespace rfa
