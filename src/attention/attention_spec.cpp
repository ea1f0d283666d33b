#include "attention/attention_spec.h"

namespace rfa {

AttentionSpec attention_spec_make(const AttentionConfig& a, int H, int Dh) {
  AttentionSpec s;
  s.config = a;
  s.kind = a.kind;
  s.H = H;
  s.Dh = Dh;
  s.rope = config_positions(a) == PositionKind::rope;
  s.rope_theta = a.rope_theta;
  s.orthogonal_features = a.orthogonal_features;
  s.sigma_init = a.sigma_init;
  s.gate_bias_init = a.gate_bias_init;
  s.short_conv = a.short_conv;
  s.output_gate = a.output_gate;
  switch (a.kind) {
    case AttentionKind::softmax:
      s.window = a.window;
      break;
    case AttentionKind::rfa:
    case AttentionKind::rfa_gate:
      s.rfa.gated = a.kind == AttentionKind::rfa_gate;
      s.rfa.feature_map = a.feature_map;
      s.rfa.num_features = a.num_features;
      s.rfa.chunk_size = a.chunk_size;
      s.rfa.eps_d = a.denominator_floor;
      s.rfa.eps_n = a.qk_norm_eps;
      s.rfa.feature_gate = a.kind == AttentionKind::rfa_gate && a.gate == GateKind::feature;
      s.rfa.time_discount = a.time_discount == TimeDiscountKind::log;
      s.rfa.discount_c = a.time_discount_c;
      s.rfa.discount_horizon = a.time_discount_horizon;
      s.D = a.num_features;
      break;
    case AttentionKind::rfa_delta:  // the gated delta rule (rfa_delta.h): the scalar gate, no denominator
      s.rfa.gated = true;
      s.rfa.feature_map = a.feature_map;  // gaussian only (config_validate: the delta rule needs |phi| = 1)
      s.rfa.num_features = a.num_features;
      s.rfa.chunk_size = a.chunk_size;
      s.rfa.eps_n = a.qk_norm_eps;
      s.D = a.num_features;
      break;
  }
  return s;
}

}  // namespace rfa
