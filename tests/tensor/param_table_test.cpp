#include <doctest/doctest.h>

#include <cstdint>

#include "core/error.h"
#include "tensor/param_table.h"

using namespace rfa;

TEST_CASE("param table: offsets aligned, names unique, decay mask exact") {
  ParamTable t;
  t.add("w", {3, 5}, true);
  t.add("norm", {7}, false);
  t.add("w2", {2, 8}, true);
  CHECK(t.get("w").offset == 0);
  CHECK(t.get("norm").offset == 16);
  CHECK(t.get("w2").offset == 32);
  CHECK(t.size() == 48);
  CHECK(t.count() == 15 + 7 + 16);
  CHECK(t.find("nope") == nullptr);
  CHECK_THROWS_AS(t.get("nope"), Error);
  auto mask = t.decay_mask();
  REQUIRE(mask.size() == 48);
  int ones = 0;
  for (float m : mask) ones += m == 1.0f;
  CHECK(ones == 15 + 16);
  CHECK(mask[14] == 1.0f);
  CHECK(mask[15] == 0.0f);  // padding
  CHECK(mask[16] == 0.0f);  // norm
  CHECK(mask[47] == 1.0f);
}
