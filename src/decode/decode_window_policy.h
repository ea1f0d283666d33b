#pragma once
// Which softmax window a decode uses, from --window and the training context, and what to
// tell the user about it. Softmax attends over at most `window` positions, so relative
// distances stay within training's; past the training context its quality degrades, which
// the warnings say. An RFA kind keeps a fixed-size state and ignores --window (a note says so);
// so does a softmax layer trained with a sliding window (attention.window): it decodes over
// exactly the window it was trained with, whatever --window says (docs/hybrid.md).
// Pure: the caller logs the lines (rfa generate: log_warn / log_info under "[generate]").
#include <cstdint>
#include <string>
#include <vector>

namespace rfa {

struct DecodeWindowRequest {
  int window = -1;             // --window: -1 = the model's context length, 0 = unlimited
  bool state_grows = false;    // some layer keeps a growing KV cache (full softmax)
  int trained_window = 0;      // the widest attention.window of the model's softmax layers; 0 = none
  int context = 0;             // model.context_length: the positions it was trained on
  int64_t max_positions = 0;   // positions a row will reach (start + prompt + -n)
  std::string attention_text;  // the attention's description, for the note (model_spec_attention_text)
};

struct DecodeWindowPolicy {
  int window = 0;                     // DecoderOptions::window (0 for an RFA kind: unused)
  std::vector<std::string> warnings;  // quality past the training context, each one line
  std::string note;                   // "--window ... ignored" for an RFA kind given one; "" otherwise
};

DecodeWindowPolicy decode_window_policy(const DecodeWindowRequest& r);

}  // namespace rfa
