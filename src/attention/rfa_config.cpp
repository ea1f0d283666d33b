#include <algorithm>

#include "attention/rfa_attention.h"
#include "attention/rfa_layout.h"

namespace rfa {

size_t rfa_saved_size(const RfaConfig& c, const AttentionDims& d) { return rfa_saved_layout(c, d).total; }

size_t rfa_workspace_size(const RfaConfig& c, const AttentionDims& d, int threads) {
  const size_t per_thread = std::max(rfa_forward_scratch_size(c, d), rfa_backward_scratch_size(c, d));
  return rfa_backward_shared_size(d, threads) + static_cast<size_t>(threads) * per_thread;
}

}  // namespace rfa
