#pragma once
// How a backward writes a parameter's or an input's gradient: add into it
// (gradient accumulation over micro-batches), or overwrite it (a step's first
// micro-batch, so no separate zeroing pass). The one spelling of that choice.

namespace rfa {

enum class GradWrite { accumulate, overwrite };

// gemm's beta for a gradient product: 0 overwrites C, 1 adds into it.
template <typename T>
constexpr T grad_beta(GradWrite write) {
  return write == GradWrite::overwrite ? T(0) : T(1);
}

}  // namespace rfa
