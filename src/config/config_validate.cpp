// Validation: first every value against its key's bounds (from the table),
// then the rules that tie keys together.
#include <cmath>
#include <string>

#include "config/config_enums.h"
#include "config/config_error.h"
#include "config/config_keys.h"
#include "config/config_layers.h"
#include "config/config_load.h"
#include "core/error.h"

namespace rfa {
namespace {

void check_allowed(const ConfigKey& key, const Config& config) {
  const std::string message = config_key_check(key, config);
  if (!message.empty()) throw ConfigKeyError({key.path}, message);
}

std::string divisors_of(int n) {
  std::string out;
  for (int d = 1; d <= n && out.size() < 60; ++d)
    if (n % d == 0) out += fmt::format("{}{}", out.empty() ? "" : ", ", d);
  return out;
}

}  // namespace

std::string config_key_check(const ConfigKey& key, const Config& config) {
  const ConfigAllowed& a = key.allowed;
  std::string text = config_key_get(key, config);
  bool ok = true;
  if (a.non_empty) {
    ok = !text.empty();
  } else if (std::isfinite(a.min) || std::isfinite(a.max)) {
    double v = std::stod(text);  // every bounded key is numeric; its text is the canonical form
    ok = (a.min_open ? v > a.min : v >= a.min) && (a.max_open ? v < a.max : v <= a.max);
  }
  if (ok) return "";
  return fmt::format("'{}' is '{}'; it must be {} ({})", key.path, text, config_key_allowed_text(key), key.help);
}

void config_validate(const Config& config) {
  for (const ConfigKey& key : config_keys()) check_allowed(key, config);

  const ModelConfig& m = config.model;
  if (m.d_model % m.n_heads != 0)
    fail_keys({"model.n_heads", "model.d_model"},
              "'model.n_heads' is {}, which does not divide 'model.d_model' = {}; heads that divide it: {}",
              m.n_heads, m.d_model, divisors_of(m.d_model));
  // Each layer's options (attention.layers; every layer attention.* when it is ""), and the
  // rules below for each: "layer 2 of 'attention.layers'" says which one a list broke.
  const std::vector<AttentionConfig> layers = config_attention_layers(config.attention, m.n_layers);
  const bool listed = config.attention.layers.find_first_not_of(" \t") != std::string::npos;
  auto which = [&](size_t l) { return listed ? fmt::format(" (layer {} of 'attention.layers')", l) : std::string(); };
  const std::string list_key = listed ? "attention.layers" : "attention.kind";
  for (size_t l = 0; l < layers.size(); ++l)
    if (config_positions(layers[l]) == PositionKind::rope && config_head_size(m) % 2 != 0)
      fail_keys({"model.n_heads", "model.d_model", listed ? "attention.layers" : "attention.positions", list_key},
                "head size d_model / n_heads = {} / {} = {} is odd, but RoPE rotates pairs of dimensions "
                "(attention.positions '{}' resolves to rope{}); make the head size even or set "
                "attention.positions=none",
                m.d_model, m.n_heads, config_head_size(m), enum_name(layers[l].positions), which(l));
  // rfa_delta (docs/delta-rule.md): the delta rule S (I - beta phi phiᵀ) stays bounded only for unit-norm
  // keys, which the gaussian (trig) map gives and arccos (relu) or the time discount's log(t + c) do not.
  for (size_t l = 0; l < layers.size(); ++l) {
    if (layers[l].kind != AttentionKind::rfa_delta) continue;
    if (layers[l].feature_map != FeatureMapKind::gaussian)
      fail_keys({listed ? "attention.layers" : "attention.feature_map", list_key},
                "'attention.feature_map' is {} but 'attention.kind' is rfa_delta{}: the delta rule needs unit-norm "
                "features (|phi|² = 1), which only the gaussian map [sin u, cos u]/sqrt(D) has; set "
                "attention.feature_map=gaussian",
                enum_name(layers[l].feature_map), which(l));
    if (layers[l].time_discount != TimeDiscountKind::none)
      fail_keys({listed ? "attention.layers" : "attention.time_discount", list_key},
                "'attention.time_discount' is {} but 'attention.kind' is rfa_delta{}: the discount scales the keys "
                "past unit norm, which the delta rule needs; set attention.time_discount=none",
                enum_name(layers[l].time_discount), which(l));
  }
  if (m.vocab_size != 0 && config.tokenizer.kind != TokenizerKind::character &&
      m.vocab_size < config.tokenizer.vocab_size)
    fail_keys({"model.vocab_size", "tokenizer.vocab_size"},
              "'model.vocab_size' is {}, smaller than 'tokenizer.vocab_size' = {}; use 0 (take it from the "
              "tokenizer) or at least {}",
              m.vocab_size, config.tokenizer.vocab_size, config.tokenizer.vocab_size);

  const TrainConfig& t = config.train;
  for (size_t l = 0; l < layers.size(); ++l)
    if (t.stateful && layers[l].kind == AttentionKind::softmax && layers[l].window > 0)
      fail_keys(listed ? std::vector<std::string>{"train.stateful", list_key}
                       : std::vector<std::string>{"train.stateful", list_key, "attention.window"},
                "'train.stateful' is true but 'attention.kind' is softmax{} with 'attention.window' {}: its window "
                "of keys is not carried between training segments (only RFA states are); use attention.kind rfa_gate "
                "or rfa there, or set train.stateful=false",
                which(l), layers[l].window);
    else if (t.stateful && layers[l].kind == AttentionKind::softmax)
      fail_keys({"train.stateful", list_key},
                "'train.stateful' is true but 'attention.kind' is softmax{}, which has no fixed-size state to carry "
                "between steps (its memory would be a growing key/value cache); use attention.kind rfa_gate or rfa, "
                "or set train.stateful=false",
                which(l));
  if (!t.stateful && t.stateful_redraw != 0)
    fail_keys({"train.stateful_redraw", "train.stateful"},
              "'train.stateful_redraw' is {} but 'train.stateful' is false: the redraw period applies to stateful "
              "runs only; set train.stateful=true or leave train.stateful_redraw at 0",
              t.stateful_redraw);
  for (size_t l = 0; l < layers.size(); ++l)
    if (t.stateful && config_positions(layers[l]) == PositionKind::rope)
      fail_keys({"train.stateful", listed ? "attention.layers" : "attention.positions"},
                "'train.stateful' is true but 'attention.positions' resolves to rope{}: positions would grow without "
                "bound across carried segments; set attention.positions=none (the RFA kinds' default)",
                which(l));

  const DataConfig& d = config.data;
  if (d.tokens.empty() && d.corpus.find(',') != std::string::npos)
    fail_keys({"data.tokens", "data.corpus"},
              "'data.corpus' lists several paths ('{}') and 'data.tokens' is empty; set data.tokens to the token file "
              "to write (one file holds the whole corpus)",
              d.corpus);
  if (d.document_boundaries == DocumentBoundaries::reset && t.stateful)
    fail_keys({"data.document_boundaries", "train.stateful"},
              "'data.document_boundaries' is reset but 'train.stateful' is true: the carried streams do not mark "
              "where documents start, so the state cannot restart there; set data.document_boundaries=none (the "
              "state runs on across documents joined by EOS) or train.stateful=false");
  if (config_preference(d) && d.packing == Packing::pack)
    fail_keys({"data.packing", "data.format"},
              "'data.packing' is pack but 'data.format' is preference: a pair's two answers are trained as padded rows "
              "side by side; set data.packing=pad");
  if (config_preference(d) && t.batch_size % 2 != 0)
    fail_keys({"train.batch_size", "data.format"},
              "'train.batch_size' is {} but 'data.format' is preference, whose rows come in pairs (chosen, rejected); "
              "use an even batch size ({} or {})",
              t.batch_size, t.batch_size - 1 > 0 ? t.batch_size - 1 : 2, t.batch_size + 1);
  if (t.stateful && (config_supervised(d) || config_preference(d)))
    fail_keys({"train.stateful", "data.format"},
              "'train.stateful' is true but 'data.format' is {}: instruction examples are independent texts with no "
              "state to carry from one row to the next; set train.stateful=false",
              enum_name(d.format));

  const OptimConfig& o = config.optim;
  if (o.lr_min > o.lr)
    fail_keys({"optim.lr_min", "optim.lr"},
              "'optim.lr_min' is {}, above 'optim.lr' = {}; the cosine decay goes down from lr to lr_min", o.lr_min,
              o.lr);
}

}  // namespace rfa
