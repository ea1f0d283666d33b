#include <algorithm>

#include "attention/rfa_attention.h"
#include "attention/rfa_layout.h"
#include "attention/rfa_scratch.h"

namespace rfa {

size_t rfa_saved_size(const RfaConfig& c, const AttentionDims& d) { return rfa_saved_layout(c, d).total; }

size_t rfa_workspace_size(const RfaConfig& c, const AttentionDims& d, int threads) {
  return rfa_shared_scratch_size(c, d, threads) + static_cast<size_t>(threads) * rfa_thread_scratch_size(c, d);
}

}  // namespace rfa
