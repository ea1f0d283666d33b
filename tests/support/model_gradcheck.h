#pragma once
// The whole-model gradient check: every parameter tensor's analytic gradient (what the
// caller's backward left in model.grads()) against central differences of loss(), which
// recomputes the forward from the current parameters. The tolerance suits the tiny double
// models of the tests (tests/model/model_gradcheck_test.cpp).
#include <functional>

#include "model/model.h"
#include "support/gradcheck.h"

namespace rfa::test {

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
