// attention.kind rfa_delta refuses what would break the delta rule's unit-norm keys
// (config_validate.cpp; docs/delta-rule.md "Feature maps"): the arccos map and the time
// discount, each with the key, the value and the fix; per layer too (attention.layers).
#include <doctest/doctest.h>

#include "config/config_load.h"
#include "support/test_files.h"

using namespace rfa;
using rfa::test::error_of;
using rfa::test::has;

TEST_CASE("config rfa_delta: the arccos map and the time discount are refused, gaussian runs") {
  auto set_error = [](std::vector<std::string> sets) { return error_of([&] { config_load("", sets); }); };
  CHECK(has(set_error({"attention.kind=rfa_delta", "attention.feature_map=arccos"}),
            "'attention.feature_map' is arccos but 'attention.kind' is rfa_delta: the delta rule needs unit-norm "
            "features"));
  CHECK(has(set_error({"attention.kind=rfa_delta", "attention.time_discount=log"}),
            "'attention.time_discount' is log but 'attention.kind' is rfa_delta"));
  CHECK(has(set_error({"model.n_layers=2", "attention.layers=rfa_gate, rfa_delta feature_map=arccos"}),
            "(layer 1 of 'attention.layers')"));
  const Config c = config_load("", {"attention.kind=rfa_delta"});
  CHECK(c.attention.kind == AttentionKind::rfa_delta);
  CHECK_NOTHROW(config_load("", {"attention.kind=rfa_delta", "attention.feature_map=arccos", "model.n_layers=2",
                                 "attention.layers=rfa_delta feature_map=gaussian, rfa_gate"}));
}
