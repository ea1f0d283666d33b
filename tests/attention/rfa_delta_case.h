#pragma once
// A random rfa_delta problem (inputs, parameters, buffers) and the plain reference the training
// form is tested against: the whole sequence in double, token by token, written as the paper
// writes it, S_t = alpha_t S_{t-1} (I - beta_t k kᵀ) + beta_t v kᵀ with S (Dh, F) and the
// (F, F) matrix (I - beta k kᵀ) formed explicitly, every S_t kept, and the feature map computed
// from its definition (phi = [sin u, cos u] / sqrt(D), u = W (sigma ⊙ x / |x|)), not by
// feature_map.h.
#include <cmath>
#include <cstdint>
#include <vector>

#include "attention/random_features.h"
#include "attention/rfa_delta.h"
#include "core/parallel.h"
#include "support/gradcheck.h"

namespace rfa::test {

// The tests' RFA options: 3 features (F = 6), the given chunk.
inline RfaConfig rfa_delta_config(int chunk) {
  RfaConfig c;
  c.num_features = 3, c.chunk_size = chunk;
  return c;
}

template <typename T>
struct RfaDeltaProblem {
  RfaConfig cfg;
  AttentionDims d;
  std::vector<T> q, k, v, n, sigma, gate_w, gate_b, beta_w, beta_b, W, out, saved, ws;
  const uint8_t* starts = nullptr;  // (B, T) document boundaries, or null

  RfaDeltaProblem(RfaConfig c, AttentionDims dims, uint64_t seed) : cfg(c), d(dims) {
    const size_t act = size_t(d.B) * d.T * d.C();
    q = random_vector<T>(act, seed + 1);
    k = random_vector<T>(act, seed + 2);
    v = random_vector<T>(act, seed + 3);
    n = random_vector<T>(act, seed + 4);
    sigma = random_vector<T>(size_t(d.H) * d.Dh, seed + 5, 0.2);
    for (auto& s : sigma) s += T(0.8);
    gate_w = random_vector<T>(size_t(d.H) * d.C(), seed + 6, 0.3);
    gate_b = random_vector<T>(size_t(d.H), seed + 7, 0.5);
    for (auto& b : gate_b) b += T(1.0);
    beta_w = random_vector<T>(size_t(d.H) * d.C(), seed + 9, 0.3);
    beta_b = random_vector<T>(size_t(d.H), seed + 10, 0.5);
    W.resize(size_t(d.H) * c.num_features * d.Dh);
    random_features_draw(W.data(), seed + 8, 0, 0, d.H, c.num_features, d.Dh, false);
    out.resize(act);
    resize();
  }
  // After changing cfg.chunk_size or d.
  void resize() {
    saved.assign(rfa_delta_saved_size(cfg, d), T(0));
    ws.assign(rfa_delta_workspace_size(cfg, d, thread_count()), T(0));
  }
  RfaInputs<T> inputs() const { return {q.data(), k.data(), v.data(), n.data(), 0, nullptr, starts}; }
  RfaDeltaParams<T> params() const {
    return {sigma.data(), gate_w.data(), gate_b.data(), beta_w.data(), beta_b.data(), W.data()};
  }
  Workspace<T> workspace() { return {ws.data(), ws.size()}; }
  void forward(const T* state_in = nullptr, T* state_out = nullptr) {
    rfa_delta_forward(out.data(), saved.data(), workspace(), inputs(), params(), cfg, d, state_in, state_out);
  }
};

// The reference: out (B, T, C); state_in, state_out (B, H, F, Dh) as the kernels lay them out
// (the transpose of the reference's S), or null.
inline void rfa_delta_reference(std::vector<double>& out, const RfaDeltaProblem<double>& p, const double* state_in,
                                double* state_out) {
  const int B = p.d.B, T = p.d.T, H = p.d.H, Dh = p.d.Dh, C = p.d.C(), D = p.cfg.num_features, F = 2 * D;
  out.assign(size_t(B) * T * C, 0.0);
  auto sigmoid = [](double a) { return 1.0 / (1.0 + std::exp(-a)); };
  auto phi_of = [&](std::vector<double>& phi, const double* x, int h) {
    double norm2 = 0;
    for (int j = 0; j < Dh; ++j) norm2 += x[j] * x[j];
    const double r = 1.0 / std::sqrt(norm2 + p.cfg.eps_n);
    phi.assign(F, 0.0);
    for (int i = 0; i < D; ++i) {
      double u = 0;
      for (int j = 0; j < Dh; ++j) u += p.W[(size_t(h) * D + i) * Dh + j] * p.sigma[size_t(h) * Dh + j] * x[j] * r;
      phi[i] = std::sin(u) / std::sqrt(double(D));
      phi[D + i] = std::cos(u) / std::sqrt(double(D));
    }
  };
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      // S (Dh, F); every S_t kept, as a plain recurrent reference would for its backward.
      std::vector<std::vector<double>> states(size_t(T) + 1, std::vector<double>(size_t(Dh) * F, 0.0));
      const size_t bh = size_t(b) * H + h;
      if (state_in)
        for (int f = 0; f < F; ++f)
          for (int x = 0; x < Dh; ++x) states[0][size_t(x) * F + f] = state_in[(bh * F + f) * Dh + x];
      std::vector<double> phq, phk, A(size_t(F) * F);
      for (int t = 0; t < T; ++t) {
        const size_t row = (size_t(b) * T + t) * C + size_t(h) * Dh;
        phi_of(phq, &p.q[row], h);
        phi_of(phk, &p.k[row], h);
        double a = p.gate_b[h], bb = p.beta_b[h];
        for (int j = 0; j < C; ++j) {
          a += p.gate_w[size_t(h) * C + j] * p.n[(size_t(b) * T + t) * C + j];
          bb += p.beta_w[size_t(h) * C + j] * p.n[(size_t(b) * T + t) * C + j];
        }
        const double alpha = p.starts && p.starts[size_t(b) * T + t] ? 0.0 : sigmoid(a), beta = sigmoid(bb);
        for (int f = 0; f < F; ++f)
          for (int g = 0; g < F; ++g) A[size_t(f) * F + g] = (f == g ? 1.0 : 0.0) - beta * phk[f] * phk[g];
        const std::vector<double>& Sp = states[size_t(t)];
        std::vector<double>& S = states[size_t(t) + 1];
        for (int x = 0; x < Dh; ++x)
          for (int g = 0; g < F; ++g) {
            double s = 0;
            for (int f = 0; f < F; ++f) s += Sp[size_t(x) * F + f] * A[size_t(f) * F + g];
            S[size_t(x) * F + g] = alpha * s + beta * p.v[row + x] * phk[g];
          }
        for (int x = 0; x < Dh; ++x) {
          double o = 0;
          for (int f = 0; f < F; ++f) o += S[size_t(x) * F + f] * phq[f];
          out[row + x] = o;
        }
      }
      if (state_out)
        for (int f = 0; f < F; ++f)
          for (int x = 0; x < Dh; ++x) state_out[(bh * F + f) * Dh + x] = states[size_t(T)][size_t(x) * F + f];
    }
}

}  // namespace rfa::test
