#include <algorithm>

#include "attention/rfa_attention.h"
#include "attention/rfa_layout.h"
#include "core/error.h"

namespace rfa {

RfaConfig rfa_config_from(const AttentionConfig& a) {
  if (a.kind == AttentionKind::softmax) fail("attention.kind is softmax; the RFA core needs rfa or rfa_gate");
  RfaConfig c;
  c.gated = a.kind == AttentionKind::rfa_gate;
  c.feature_map = a.feature_map;
  c.num_features = a.num_features;
  c.chunk_size = a.chunk_size;
  c.eps_d = a.denominator_floor;
  c.eps_n = a.qk_norm_eps;
  rfa_config_validate(c);
  return c;
}

void rfa_config_validate(const RfaConfig& c) {
  if (c.num_features <= 0) fail("attention.num_features = {}; use a positive count such as 32", c.num_features);
  if (c.chunk_size <= 0) fail("attention.chunk_size = {}; use a positive chunk length such as 64", c.chunk_size);
  if (!(c.eps_d > 0)) fail("attention.denominator_floor = {}; it must be > 0 (e.g. 1e-3)", c.eps_d);
  if (!(c.eps_n >= 0)) fail("attention.qk_norm_eps = {}; it must be >= 0 (e.g. 1e-6)", c.eps_n);
}

size_t rfa_saved_size(const RfaConfig& c, const AttentionDims& d) { return rfa_saved_layout(c, d).total; }

size_t rfa_workspace_size(const RfaConfig& c, const AttentionDims& d, int threads) {
  const size_t per_thread = std::max(rfa_forward_scratch_size(c, d), rfa_backward_scratch_size(c, d));
  return rfa_backward_shared_size(d, threads) + static_cast<size_t>(threads) * per_thread;
}

}  // namespace rfa
