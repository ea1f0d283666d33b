#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "checkpoint/train_state.h"
#include "core/error.h"

using namespace rfa;

TEST_CASE("train state: serialise then parse round-trips every field exactly") {
  TrainState s;
  s.step = 123456;
  s.seed = 18446744073709551557ull;  // > 2^63: must survive as an exact integer
  s.data_position = 987654321012;
  s.tokens_seen = 1ll << 40;
  s.wall_seconds = 3601.123456789;
  s.val_loss = 2.718281828459045;
  s.best_val_loss = 2.5;
  s.tokenizer_xxh64 = "0123456789abcdef";
  s.threads = 7;
  TrainState r = train_state_parse(train_state_serialize(s), "state.json");
  CHECK(r.format_version == kCheckpointFormatVersion);
  CHECK(r.step == s.step);
  CHECK(r.seed == s.seed);
  CHECK(r.data_position == s.data_position);
  CHECK(r.tokens_seen == s.tokens_seen);
  CHECK(r.wall_seconds == s.wall_seconds);
  CHECK(r.val_loss == s.val_loss);
  CHECK(r.best_val_loss == s.best_val_loss);
  CHECK(r.tokenizer_xxh64 == s.tokenizer_xxh64);
  CHECK(r.threads == 7);
}

TEST_CASE("train state: threads is optional (files written before it was recorded read as 0)") {
  TrainState s;
  s.threads = 2;
  std::string json = train_state_serialize(s);
  const size_t at = json.find(",\n  \"threads\": 2");
  REQUIRE(at != std::string::npos);
  json.erase(at, std::string(",\n  \"threads\": 2").size());
  CHECK(train_state_parse(json, "state.json").threads == 0);
}

TEST_CASE("train state: no evaluation yet is NaN val_loss and +inf best, written as null") {
  TrainState s;
  std::string json = train_state_serialize(s);
  CHECK(json.find("\"val_loss\": null") != std::string::npos);
  CHECK(json.find("\"best_val_loss\": null") != std::string::npos);
  TrainState r = train_state_parse(json, "state.json");
  CHECK(std::isnan(r.val_loss));
  CHECK(std::isinf(r.best_val_loss));
  CHECK(r.best_val_loss > 0);
}

TEST_CASE("train state: wrong version, missing or ill-typed fields are clear errors") {
  std::string json = train_state_serialize(TrainState{});
  std::string v2 = json;
  v2.replace(v2.find("\"format_version\": 1"), 19, "\"format_version\": 2");
  CHECK_THROWS_WITH_AS(train_state_parse(v2, "ck/state.json"),
                       doctest::Contains("ck/state.json: checkpoint format_version 2 is not supported; this rfa reads "
                                         "version 1"),
                       Error);
  std::string missing = json;
  missing.replace(missing.find("\"step\""), 6, "\"stop\"");
  CHECK_THROWS_WITH_AS(train_state_parse(missing, "s"), doctest::Contains("missing field \"step\""), Error);
  std::string typed = json;
  typed.replace(typed.find("\"seed\": 0"), 9, "\"seed\": \"0\"");
  CHECK_THROWS_WITH_AS(train_state_parse(typed, "s"), doctest::Contains("\"seed\" must be an integer"), Error);
  CHECK_THROWS_AS(train_state_parse(json.substr(0, json.size() / 2), "s"), Error);
  std::string negative = json;
  negative.replace(negative.find("\"step\": 0"), 9, "\"step\": -5");
  CHECK_THROWS_WITH_AS(train_state_parse(negative, "s"), doctest::Contains("step -5"), Error);
}
