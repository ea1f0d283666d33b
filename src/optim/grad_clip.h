#pragma once
// Global gradient-norm clipping and the non-finite finder the trainer uses to
// name the parameter whose gradient blew up.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rfa {

// sqrt(sum g_i^2), accumulated in double over fixed blocks so the result does
// not depend on the thread count. Non-finite if any entry is. No allocation.
double grad_norm(const float* grads,  // (n)
                 int64_t n);

// Computes the global norm and, if max_norm > 0 and norm > max_norm, scales
// every gradient by max_norm / norm. Returns the pre-clip norm for logging.
// A non-finite norm is returned as is and the gradients are left untouched:
// the caller should check std::isfinite and report with grad_find_non_finite.
double grad_clip(float* grads,  // (n)
                 int64_t n, double max_norm);

// A named slice [offset, offset + count) of a flat array, e.g. one parameter tensor.
struct NamedRange {
  std::string name;
  int64_t offset = 0;
  int64_t count = 0;
};

struct NonFinite {
  std::string name;     // the range's name ("" if the entry lies in no range)
  int64_t index = 0;    // index within that range (flat index if in no range)
  float value = 0;      // the NaN or +-inf found
};

// The first (lowest flat index) NaN/inf in data, located in `ranges`; nullopt
// if every entry is finite. For error reporting, not for the hot loop.
std::optional<NonFinite> grad_find_non_finite(const float* data,  // (n)
                                              int64_t n, const std::vector<NamedRange>& ranges);

}  // namespace rfa
