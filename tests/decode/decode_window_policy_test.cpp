// decode_window_policy: the window rfa generate decodes softmax with, and the lines it
// logs, for each --window against the training context (the texts are the user's).
#include <doctest/doctest.h>

#include "decode/decode_window_policy.h"

using namespace rfa;

namespace {

DecodeWindowRequest softmax_request(int window, int64_t max_positions) {
  return {.window = window, .state_grows = true, .context = 64, .max_positions = max_positions,
          .attention_text = "softmax"};
}

}  // namespace

TEST_CASE("decode window policy: softmax defaults to the training context, silently") {
  const DecodeWindowPolicy p = decode_window_policy(softmax_request(-1, 1000));
  CHECK(p.window == 64);
  CHECK(p.warnings.empty());
  CHECK(p.note.empty());
}

TEST_CASE("decode window policy: a window within the context is kept without a warning") {
  const DecodeWindowPolicy p = decode_window_policy(softmax_request(16, 1000));
  CHECK(p.window == 16);
  CHECK(p.warnings.empty());
}

TEST_CASE("decode window policy: --window 0 past the context warns, within it does not") {
  const DecodeWindowPolicy past = decode_window_policy(softmax_request(0, 100));
  CHECK(past.window == 0);
  REQUIRE(past.warnings.size() == 1);
  CHECK(past.warnings[0] ==
        "softmax model trained on 64 positions decodes 100 with its whole KV cache (--window 0); quality degrades "
        "past the training context (RFA kinds have no such limit)");
  const DecodeWindowPolicy within = decode_window_policy(softmax_request(0, 64));
  CHECK(within.window == 0);
  CHECK(within.warnings.empty());
}

TEST_CASE("decode window policy: a window wider than the context warns") {
  const DecodeWindowPolicy p = decode_window_policy(softmax_request(65, 10));
  CHECK(p.window == 65);
  REQUIRE(p.warnings.size() == 1);
  CHECK(p.warnings[0] ==
        "--window 65 is wider than the 64 positions the model was trained on; quality degrades past the training "
        "context");
}

TEST_CASE("decode window policy: an RFA kind has no window, and a given one is noted as ignored") {
  DecodeWindowRequest r{.window = -1, .state_grows = false, .context = 64, .max_positions = 1000,
                        .attention_text = "rfa_gate"};
  DecodeWindowPolicy p = decode_window_policy(r);
  CHECK(p.window == 0);
  CHECK(p.warnings.empty());
  CHECK(p.note.empty());
  r.window = 32;
  p = decode_window_policy(r);
  CHECK(p.window == 0);
  CHECK(p.warnings.empty());
  CHECK(p.note == "--window 32 ignored: rfa_gate attention keeps a fixed-size state, no KV cache");
}

TEST_CASE("decode window policy: layers trained with a window keep it, and the note says so") {
  // Only windowed softmax and RFA layers: a fixed-size state, --window ignored.
  DecodeWindowRequest r{.window = 32, .state_grows = false, .trained_window = 16, .context = 64,
                        .max_positions = 1000, .attention_text = "rfa_gate x3, softmax window 16"};
  DecodeWindowPolicy p = decode_window_policy(r);
  CHECK(p.window == 0);
  CHECK(p.warnings.empty());
  CHECK(p.note == "--window 32 ignored: rfa_gate x3, softmax window 16 attention keeps a fixed-size state (its "
                  "softmax layers attend over the window they were trained with)");
  // Beside a full softmax layer: --window applies to that one, the trained windows stay.
  r.state_grows = true;
  p = decode_window_policy(r);
  CHECK(p.window == 32);
  CHECK(p.note == "--window 32 applies to the full-attention softmax layers; those trained with attention.window "
                  "keep it");
  r.window = -1;  // the default: the context, silently
  p = decode_window_policy(r);
  CHECK(p.window == 64);
  CHECK(p.note.empty());
  // A trained window wider than the context reaches further back than training did.
  r.trained_window = 100;
  r.state_grows = false;
  p = decode_window_policy(r);
  REQUIRE(p.warnings.size() == 1);
  CHECK(p.warnings[0] ==
        "attention.window 100 is wider than the 64 positions the model was trained on: past them its windowed "
        "softmax layers attend further back than in training; quality degrades past the training context");
}
