// checkpoint_space: how much room the checkpoints a run keeps at once take, beside what is free.
#include <doctest/doctest.h>

#include "train/checkpoint_space.h"

using namespace rfa;

TEST_CASE("checkpoint_space: keep_last, the best and the next one at once, less the checkpoints already there") {
  CheckpointConfig c;
  c.keep_last = 3;
  c.keep_best = true;
  const double each = 12.0 * 1e6 + 30000 + 16384;  // 1M parameters: weights, m and v; a 30 KB tokenizer
  CheckpointSpace s = checkpoint_space(1000000, 30000, c, 0, 1e9);
  CHECK(s.each == doctest::Approx(each));
  CHECK(s.slots == 5);
  CHECK(s.needed() == doctest::Approx(5 * each));
  CHECK_FALSE(s.short_of_room());
  CHECK(checkpoint_space(1000000, 30000, c, 0, 4 * each).short_of_room());
  // A resumed run's checkpoints are replaced as it goes: only the rest is new.
  CHECK(checkpoint_space(1000000, 30000, c, 3 * each, 2.5 * each).needed() == doctest::Approx(2 * each));
  CHECK_FALSE(checkpoint_space(1000000, 30000, c, 3 * each, 2.5 * each).short_of_room());
  // Never less than one checkpoint, whatever is there already.
  CHECK(checkpoint_space(1000000, 30000, c, 10 * each, 1e12).needed() == doctest::Approx(each));
  c.keep_best = false;
  c.keep_last = 1;
  CHECK(checkpoint_space(1000000, 30000, c, 0, 1e9).slots == 2);
  CHECK_FALSE(checkpoint_space(1000000, 30000, c, 0, -1).short_of_room());  // unknown: no warning
}
