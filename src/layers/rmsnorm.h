#pragma once
// RMSNorm: out = inp * rstd * weight, rstd = 1 / sqrt(mean(inp^2) + eps), per row.
#include <cstdint>

#include "layers/grad_write.h"

namespace rfa {

template <typename T>
void rmsnorm_forward(T* out,          // (N, C)
                     T* rstd,         // (N) saved for the backward
                     const T* inp,    // (N, C)
                     const T* weight, // (C)
                     int64_t N, int C, double eps);

// inp += residual (in place, the residual stream's add), then the rmsnorm_forward
// of the sum: one row pass instead of add_inplace + rmsnorm_forward.
template <typename T>
void residual_rmsnorm_forward(T* out,            // (N, C)
                              T* rstd,           // (N) saved for the backward
                              T* inp,            // (N, C) += residual
                              const T* residual, // (N, C)
                              const T* weight,   // (C)
                              int64_t N, int C, double eps);

// dinp is added into, or overwritten (dinp_write: then the caller needs no
// zeroed buffer); dweight is always added into.
template <typename T>
void rmsnorm_backward(T* dinp,          // (N, C) (+)=
                      T* dweight,       // (C) +=
                      const T* dout,    // (N, C)
                      const T* inp,     // (N, C)
                      const T* weight,  // (C)
                      const T* rstd,    // (N) from the forward
                      int64_t N, int C, GradWrite dinp_write = GradWrite::accumulate);

}  // namespace rfa
