#include "decode/decode_window_policy.h"

#include <fmt/format.h>

namespace rfa {

DecodeWindowPolicy decode_window_policy(const DecodeWindowRequest& r) {
  DecodeWindowPolicy p;
  if (r.trained_window > r.context)
    p.warnings.push_back(fmt::format(
        "attention.window {} is wider than the {} positions the model was trained on: past them its windowed softmax "
        "layers attend further back than in training; quality degrades past the training context",
        r.trained_window, r.context));
  if (!r.state_grows) {
    if (r.window >= 0)
      p.note = r.trained_window > 0
                   ? fmt::format("--window {} ignored: {} attention keeps a fixed-size state (its softmax layers "
                                 "attend over the window they were trained with)",
                                 r.window, r.attention_text)
                   : fmt::format("--window {} ignored: {} attention keeps a fixed-size state, no KV cache", r.window,
                                 r.attention_text);
    return p;
  }
  if (r.trained_window > 0 && r.window >= 0)
    p.note = fmt::format("--window {} applies to the full-attention softmax layers; those trained with "
                         "attention.window keep it",
                         r.window);
  p.window = r.window < 0 ? r.context : r.window;
  if (p.window == 0 && r.max_positions > r.context)
    p.warnings.push_back(fmt::format(
        "softmax model trained on {} positions decodes {} with its whole KV cache (--window 0); "
        "quality degrades past the training context (RFA kinds have no such limit)",
        r.context, r.max_positions));
  if (p.window > r.context)
    p.warnings.push_back(fmt::format("--window {} is wider than the {} positions the model was trained on; quality "
                                     "degrades past the training context",
                                     p.window, r.context));
  return p;
}

}  // namespace rfa
