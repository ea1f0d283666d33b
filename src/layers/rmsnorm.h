#pragma once
// RMSNorm: out = inp * rstd * weight, rstd = 1 / sqrt(mean(inp^2) + eps), per row.
#include <cstdint>

namespace rfa {

template <typename T>
void rmsnorm_forward(T* out,          // (N, C)
                     T* rstd,         // (N) saved for the backward
                     const T* inp,    // (N, C)
                     const T* weight, // (C)
                     int64_t N, int C, double eps);

template <typename T>
void rmsnorm_backward(T* dinp,          // (N, C) +=
                      T* dweight,       // (C) +=
                      const T* dout,    // (N, C)
                      const T* inp,     // (N, C)
                      const T* weight,  // (C)
                      const T* rstd,    // (N) from the forward
                      int64_t N, int C);

}  // namespace rfa
