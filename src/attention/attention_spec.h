#pragma once
// The attention configuration resolved once, when the model spec is built
// (model_spec_make): every attention entry point reads this struct, never the
// option tree, so nothing re-derives or re-validates it per call. The values
// were validated with the config (config/config_keys.cpp bounds,
// config_validate's cross-key rules); this only derives.
#include "attention/rfa_attention.h"
#include "config/config.h"

namespace rfa {

struct AttentionSpec {
  AttentionConfig config;            // the layer's options as given (a kind reads its own from here)
  AttentionKind kind = AttentionKind::rfa_gate;
  int H = 0, Dh = 0;                 // heads, head size; C = H * Dh
  bool rope = false;                 // q and k rotated by position (attention.positions resolved)
  double rope_theta = 10000.0;
  RfaConfig rfa;                     // RFA kinds: gate, feature map, D, chunk, eps_d, eps_n
  int D = 0;                         // random vectors per head; 0 when the kind draws none (softmax)
  bool orthogonal_features = false;  // random matrices drawn orthogonal (QR)
  double sigma_init = 1.0;           // RFA kinds: the learned per-head sigma at init
  double gate_bias_init = 2.0;       // RFA-Gate: gate bias at init
  int window = 0;                    // softmax: attend to the last `window` positions only; 0 = all (causal)
  int short_conv = 0;                // taps K of the convolution on q, k, v (short_conv.h); 0 = none
  bool output_gate = false;          // each head's output RMS-normed and SiLU-gated (output_gate.h)
  double norm_eps = 1e-5;            // the output norm's epsilon: the model's (model.norm_eps)
  int C() const { return H * Dh; }
  friend bool operator==(const AttentionSpec&, const AttentionSpec&) = default;
};

AttentionSpec attention_spec_make(const AttentionConfig& a, int H, int Dh);

}  // namespace rfa
