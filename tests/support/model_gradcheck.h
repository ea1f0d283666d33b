#pragma once
// The whole-model gradient check: every parameter tensor's analytic gradient (what the
// caller's backward left in model.grads()) against central differences of loss(), which
// recomputes the forward from the current parameters. The tolerance suits the tiny double
// models of the tests (tests/model/model_gradcheck_test.cpp).
#include <functional>

#include "model/model.h"
#include "support/gradcheck.h"
#include "support/tiny_model.h"

namespace rfa::test {

// The tiny model the loss gradient checks use (V=11, T=5, C=8, H=2, L=2, F=3, chunks of 2):
// init_std 0.5 so that every path carries a visible gradient, a denominator floor that never binds.
inline ModelSpec gradcheck_spec(AttentionKind kind) {
  Config c = tiny_config(kind, {.vocab = 11, .context = 5, .d_model = 8, .num_features = 3, .chunk_size = 2,
                                .init_std = 0.5});
  c.model.ffn_hidden = 12;
  c.attention.denominator_floor = 1e-6;
  return tiny_spec(c);
}

inline void check_model_gradient(Model<double>& model, const std::function<double()>& loss) {
  GradCheckTolerance tol;
  tol.eps = 2e-6;
  tol.rtol = 1e-5;
  tol.atol = 1e-9;
  for (const ParamEntry& e : model.table.entries()) {
    INFO("tensor ", e.name);
    check_gradient(e.name, model.params() + e.offset, model.grads() + e.offset, static_cast<size_t>(e.numel), loss,
                   tol);
  }
}

}  // namespace rfa::test
