#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "checkpoint/train_state.h"
#include "core/error.h"

using namespace rfa;

namespace {

// state.json exactly as format version 1 wrote it (before the checksum), at step 12.
const char* kVersion1 = R"({
  "format_version": 1,
  "step": 12,
  "seed": 1337,
  "data_position": 12,
  "tokens_seen": 6144,
  "wall_seconds": 3.25,
  "val_loss": 2.5,
  "best_val_loss": 2.5,
  "tokenizer_checksum": "0123456789abcdef",
  "threads": 2
}
)";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

// The file with its checksum line removed.
std::string without_checksum(std::string json) {
  const size_t at = json.find(",\n  \"checksum\"");
  REQUIRE(at != std::string::npos);
  return json.erase(at, json.rfind('\n', json.size() - 2) - at);
}

}  // namespace

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
  s.config_xxh64 = "fedcba9876543210";
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
  CHECK(r.config_xxh64 == s.config_xxh64);
}

TEST_CASE("train state: a fine-tune records its parent (path, step, checksum), covered by the checksum") {
  TrainState s;
  s.step = 40;
  std::string plain = train_state_serialize(s);
  CHECK(plain.find("init_from") == std::string::npos);  // not a fine-tune: the file is as before
  s.init_from = "runs/kjv-quick/checkpoints/step-001000";
  s.init_from_step = 1000;
  s.init_from_xxh64 = "56f505e716beb94d";
  const std::string json = train_state_serialize(s);
  TrainState r = train_state_parse(json, "state.json");
  CHECK(r.init_from == s.init_from);
  CHECK(r.init_from_step == 1000);
  CHECK(r.init_from_xxh64 == s.init_from_xxh64);
  CHECK_THROWS_WITH_AS(train_state_parse(replaced(json, "\"init_from_step\": 1000", "\"init_from_step\": 999"), "s"),
                       doctest::Contains("the file was edited or corrupted"), Error);
  CHECK_THROWS_WITH_AS(train_state_parse(replaced(json, ",\n  \"init_from_step\": 1000", ""), "s"),
                       doctest::Contains("missing field \"init_from_step\""), Error);
}

TEST_CASE("train state: threads is optional (files written before it was recorded read as 0)") {
  TrainState s;
  s.format_version = 1;  // version 1 files carry no checksum, so a field can be dropped
  s.threads = 2;
  std::string json = without_checksum(train_state_serialize(s));
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
  std::string v3 = json;
  v3.replace(v3.find("\"format_version\": 2"), 19, "\"format_version\": 3");
  CHECK_THROWS_WITH_AS(train_state_parse(v3, "ck/state.json"),
                       doctest::Contains("ck/state.json: checkpoint format_version 3 is not supported; this rfa reads "
                                         "versions 1 to 2"),
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


TEST_CASE("train state: the checksum covers every field; editing the step (12 -> 13, 12 -> 2) is refused") {
  TrainState s;
  s.step = 12;
  s.data_position = 12;
  s.seed = 1337;
  s.val_loss = 2.5;
  s.best_val_loss = 2.5;
  const std::string json = train_state_serialize(s);
  CHECK(json.find("\"checksum\": \"") != std::string::npos);
  CHECK(train_state_parse(json, "ck/state.json").step == 12);
  for (const char* edit : {"\"step\": 13", "\"step\": 2"}) {
    CAPTURE(edit);
    CHECK_THROWS_WITH_AS(train_state_parse(replaced(json, "\"step\": 12", edit), "ck/state.json"),
                         doctest::Contains("ck/state.json: checksum"), Error);
    CHECK_THROWS_WITH_AS(train_state_parse(replaced(json, "\"step\": 12", edit), "ck/state.json"),
                         doctest::Contains("Restore the original state.json, or resume from another checkpoint"),
                         Error);
  }
  CHECK_THROWS_AS(train_state_parse(replaced(json, "\"seed\": 1337", "\"seed\": 1338"), "s"), Error);
  CHECK_THROWS_AS(train_state_parse(replaced(json, "\"val_loss\": 2.5", "\"val_loss\": 2.4"), "s"), Error);
  // The checksum is over the values, not the layout: re-formatting the file keeps it valid.
  std::string compact;
  for (char c : json)
    if (c != '\n' && c != ' ') compact += c;
  CHECK(train_state_parse(compact, "s").step == 12);
}

TEST_CASE("train state: version 2 requires the checksum; version 1 files (written without one) still load") {
  TrainState s;
  s.step = 12;
  CHECK_THROWS_WITH_AS(train_state_parse(without_checksum(train_state_serialize(s)), "ck/state.json"),
                       doctest::Contains("ck/state.json: missing field \"checksum\""), Error);

  const TrainState old = train_state_parse(kVersion1, "old/state.json");
  CHECK(old.format_version == 1);
  CHECK(old.step == 12);
  CHECK(old.tokens_seen == 6144);
  CHECK(old.threads == 2);
}

TEST_CASE("train state: a malformed state.json is refused naming the file, the line and what is wrong") {
  TrainState s;
  s.step = 12;
  const std::string json = train_state_serialize(s);  // "step" is on line 3
  CHECK_THROWS_WITH_AS(train_state_parse(replaced(json, "\"step\": 12,", "\"step\": 12"), "ck/state.json"),
                       doctest::Contains("ck/state.json: malformed JSON at line 4, column 8 (byte 45): syntax error while parsing "
                                         "object - unexpected string literal; expected '}'"), Error);
  CHECK_THROWS_WITH_AS(train_state_parse(replaced(json, "\"step\": 12,", "\"step\": 12, \"step\": 13,"), "ck/state.json"),
                       doctest::Contains("ck/state.json: malformed JSON at line 3, column 21 (byte 45): duplicate key "
                                         "\"step\""),
                       Error);
  CHECK_THROWS_WITH_AS(train_state_parse(replaced(json, "\"val_loss\": null", "\"val_loss\": NaN"), "ck/state.json"),
                       doctest::Contains("ck/state.json: malformed JSON at line 8"), Error);
  CHECK_THROWS_WITH_AS(train_state_parse(replaced(json, "\"step\": 12", "\"step\": 1e999"), "ck/state.json"),
                       doctest::Contains("ck/state.json: malformed JSON at line 3, column 15 (byte 39): number overflow "
                                         "parsing '1e999'"),
                       Error);
  CHECK_THROWS_WITH_AS(train_state_parse(replaced(json, "\"step\": 12", "\"step\": 99999999999999999999"), "ck/state.json"),
                       doctest::Contains("ck/state.json: \"step\" must be an integer in range, got 99999999999999999999"),
                       Error);
  CHECK_THROWS_WITH_AS(train_state_parse(replaced(json, "\"step\": 12", "\"step\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["),
                                         "ck/state.json"),
                       doctest::Contains("ck/state.json: malformed JSON at line 3, column 42 (byte 66): nested too deeply"),
                       Error);
}
