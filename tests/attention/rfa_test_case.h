#pragma once
// A random RFA problem (inputs, parameters, buffers) for the RFA tests.
#include <vector>

#include "attention/random_features.h"
#include "attention/rfa_attention.h"
#include "core/parallel.h"
#include "support/gradcheck.h"

namespace rfa::test {

template <typename T>
struct RfaProblem {
  RfaConfig cfg;
  AttentionDims d;
  std::vector<T> q, k, v, n, sigma, gate_w, gate_b, W, out, saved, ws;
  int64_t pos0 = 0;  // absolute position of row 0 (the time discount)
  const uint8_t* starts = nullptr;  // (B, T) document boundaries, or null

  RfaProblem(RfaConfig c, AttentionDims dims, uint64_t seed, double qk_scale = 1.0) : cfg(c), d(dims) {
    const size_t act = size_t(d.B) * d.T * d.C();
    q = random_vector<T>(act, seed + 1, qk_scale);
    k = random_vector<T>(act, seed + 2, qk_scale);
    v = random_vector<T>(act, seed + 3);
    n = random_vector<T>(act, seed + 4);
    sigma = random_vector<T>(size_t(d.H) * d.Dh, seed + 5, 0.2);
    for (auto& s : sigma) s += T(0.8);
    const size_t G = size_t(d.H) * rfa_gate_width(c);  // gate values per token: H, or H*F (feature gate)
    gate_w = random_vector<T>(G * d.C(), seed + 6, 0.3);
    gate_b = random_vector<T>(G, seed + 7, 0.5);
    for (auto& b : gate_b) b += T(1.0);
    W.resize(size_t(d.H) * c.num_features * d.Dh);
    random_features_draw(W.data(), seed + 8, 0, 0, d.H, c.num_features, d.Dh, false);
    out.resize(act);
    saved.resize(rfa_saved_size(c, d));
    ws.resize(rfa_workspace_size(c, d, thread_count()));
  }
  RfaInputs<T> inputs() const {
    return {q.data(), k.data(), v.data(), cfg.gated ? n.data() : nullptr, pos0, nullptr, starts};
  }
  RfaParams<T> params() const { return {sigma.data(), gate_w.data(), gate_b.data(), W.data()}; }
  Workspace<T> workspace() { return {ws.data(), ws.size()}; }
  void forward(const T* state_in = nullptr, T* state_out = nullptr) {
    rfa_forward(out.data(), saved.data(), workspace(), inputs(), params(), cfg, d, state_in, state_out);
  }
};

}  // namespace rfa::test
