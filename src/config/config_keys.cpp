#include "config/config_keys.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "config/config_enums.h"
#include "core/number_parse.h"
#include "core/number_text.h"

namespace rfa {
namespace {

// "model.n_layers", plus a function pointer to c.model.n_layers.
#define RFA_FIELD(section, name) \
  #section "." #name, ConfigField { +[](Config& c) -> auto& { return c.section.name; } }

constexpr ConfigAllowed kAny{};
constexpr ConfigAllowed kNonEmpty{.non_empty = true};
constexpr ConfigAllowed kPaths{.list = true};  // "a,b", or a YAML sequence of them
constexpr ConfigAllowed kNonEmptyPaths{.non_empty = true, .list = true};
constexpr ConfigAllowed at_least(double v) { return {.min = v}; }
constexpr ConfigAllowed above(double v) { return {.min = v, .min_open = true}; }
constexpr ConfigAllowed in_range(double lo, double hi) { return {.min = lo, .max = hi}; }  // [lo, hi]
constexpr ConfigAllowed kOpenUnit{.min = 0, .max = 1, .min_open = true, .max_open = true};      // (0, 1)
constexpr ConfigAllowed kHalfOpenUnit{.min = 0, .max = 1, .max_open = true};                    // [0, 1)
constexpr ConfigAllowed kUpperUnit{.min = 0, .max = 1, .min_open = true};                       // (0, 1]

const ConfigKey kKeys[] = {
    {RFA_FIELD(model, vocab_size), in_range(0, kMaxVocab), "V; 0 = take it from the tokenizer"},
    {RFA_FIELD(model, n_layers), in_range(1, kMaxLayers), "L, transformer blocks"},
    {RFA_FIELD(model, d_model), in_range(1, kMaxWidth), "C, model width"},
    {RFA_FIELD(model, n_heads), at_least(1), "H, attention heads; must divide d_model"},
    {RFA_FIELD(model, ffn_hidden), in_range(0, kMaxFfnHidden), "SwiGLU hidden size; 0 = 8/3 C rounded up to a multiple of 32"},
    {RFA_FIELD(model, context_length), in_range(1, kMaxLength), "T, training sequence length (softmax's window at evaluation)"},
    {RFA_FIELD(model, tie_embeddings), kAny, "share the token embedding with the output projection"},
    {RFA_FIELD(model, norm_eps), above(0), "RMSNorm epsilon"},
    {RFA_FIELD(model, init_std), above(0), "weights ~ normal(0, init_std); residual projections / sqrt(2L)"},

    {RFA_FIELD(attention, kind), kAny, "softmax baseline, ungated RFA, RFA-Gate, or RFA with the gated delta rule (docs/delta-rule.md)"},
    {RFA_FIELD(attention, feature_map), kAny, "random feature map phi (gaussian gives 2D features)"},
    {RFA_FIELD(attention, num_features), in_range(1, kMaxWidth), "D, random vectors per head"},
    {RFA_FIELD(attention, positions), kAny, "auto = rope for softmax, none for the RFA kinds"},
    {RFA_FIELD(attention, rope_theta), above(0), "RoPE base"},
    {RFA_FIELD(attention, chunk_size), in_range(1, kMaxLength), "chunk length of RFA's chunked training form"},
    {RFA_FIELD(attention, denominator_floor), above(0), "eps_d: the RFA denominator is max(den, eps_d)"},
    {RFA_FIELD(attention, qk_norm_eps), above(0), "eps_n of the l2 normalisation of q and k"},
    {RFA_FIELD(attention, orthogonal_features), kAny, "draw orthogonal random features (QR)"},
    {RFA_FIELD(attention, gate_bias_init), kAny, "gate bias at init; sigmoid(2) ~ 0.88 keeps a long memory"},
    {RFA_FIELD(attention, sigma_init), above(0), "initial value of the learned per-head sigma"},
    {RFA_FIELD(attention, gate), kAny, "rfa_gate: one gate per head and token, or one per state feature (2D for gaussian); other kinds ignore it"},
    {RFA_FIELD(attention, time_discount), kAny, "RFA kinds: log scales the feature written at position t by log(t + c); softmax ignores it"},
    {RFA_FIELD(attention, time_discount_c), above(1), "c of the time discount log(t + c)"},
    {RFA_FIELD(attention, time_discount_horizon), at_least(0), "the discount's t held past this position; 0 = no cap"},
    {RFA_FIELD(attention, short_conv), in_range(0, 64),
     "every kind: taps of a causal depthwise convolution on q, k and v before the attention; 0 = none "
     "(docs/short-conv.md)"},
    {RFA_FIELD(attention, output_gate), kAny,
     "every kind: each head's output RMS-normalised, then gated by SiLU(W_g n) before the output projection "
     "(docs/output-gate.md)"},
    {RFA_FIELD(attention, window), in_range(0, kMaxLength),
     "softmax: a sliding window of this many positions (token i attends to i-window+1..i; decoding keeps a ring of "
     "window slots, a fixed-size state); 0 = full causal attention; RFA kinds ignore it (docs/hybrid.md)"},
    {RFA_FIELD(attention, layers), kAny,
     "each layer's kind and overrides of these keys: \"\" = the keys above in every layer; else one entry per layer, "
     "e.g. \"3*rfa_gate gate=feature, softmax\" (N* repeats an entry)"},

    {RFA_FIELD(tokenizer, path), kAny,
     "SentencePiece model file, trained from the corpus when missing; \"\" = next to the corpus, named after it, "
     "the kind and the vocab (data/kjv.txt: data/kjv-bpe2048.model; a directory data/books/: beside it, "
     "data/books-bpe2048.model; a list data/a.txt,b.txt: beside its first path, data/a+1-bpe2048.model); a fine-tune "
     "(train.init_from) uses its parent's"},
    {RFA_FIELD(tokenizer, kind), kAny, "SentencePiece model type"},
    {RFA_FIELD(tokenizer, vocab_size), in_range(kTokenizerMinVocab, kMaxVocab),
     "V to train, with 3 control + 256 byte tokens; char: an upper bound"},
    {RFA_FIELD(tokenizer, corpus), kPaths,
     "training text: a file, a directory or several (as data.corpus; read as text); \"\" = data.corpus"},
    {RFA_FIELD(tokenizer, max_sentences), at_least(1), "SentencePiece input_sentence_size"},
    {RFA_FIELD(tokenizer, character_coverage), kUpperUnit, "SentencePiece character_coverage"},

    {RFA_FIELD(data, corpus), kNonEmptyPaths,
     "the corpus: a file, a directory (its files, by name) or several of either, separated by commas or as a YAML "
     "list"},
    {RFA_FIELD(data, tokens), kAny,
     "prepared token file; \"\" = the corpus path + .tokens (a directory's beside it; a list must name one)"},
    {RFA_FIELD(data, val_fraction), kOpenUnit,
     "the last fraction of the tokens (text) or of the documents (other formats) is the validation split"},
    {RFA_FIELD(data, format), kAny,
     "text: UTF-8 text, files joined by EOS; jsonl: {\"text\"} documents; alpaca: {\"instruction\",\"input\",\"output\"}; "
     "prompt_completion: {\"prompt\",\"completion\"}; preference: {\"prompt\",\"chosen\",\"rejected\"} for DPO (JSON Lines, "
     "each document ends with EOS); mqar: recall examples written by `rfa data mqar` (docs/recall.md)"},
    {RFA_FIELD(data, document_boundaries), kAny,
     "none: attention runs on across documents joined by EOS (GPT-style pretraining; text runs unchanged); reset: "
     "it restarts at each document's first token (RFA state empty, softmax masked, RoPE and time-discount "
     "positions from 0), in training and validation; for packed instruction rows (data.packing pack) use reset"},
    {RFA_FIELD(data, packing), kAny,
     "alpaca/prompt_completion: pad = one example per row; pack = whole examples back to back, the label across "
     "examples masked"},
    {"data.template", ConfigField{+[](Config& c) -> auto& { return c.data.prompt_template; }}, kAny,
     "alpaca: an alpaca example's prompt, Stanford Alpaca's exact text; alpaca_short: without its first sentence"},
    {RFA_FIELD(data, train_on_prompt), kAny,
     "alpaca/prompt_completion: the loss covers the prompt tokens too (default: the response and its EOS only)"},

    {RFA_FIELD(train, run_dir), kNonEmpty, "directory for logs and checkpoints"},
    {RFA_FIELD(train, batch_size), at_least(1), "B, sequences per micro-batch"},
    {RFA_FIELD(train, grad_accum), in_range(1, kMaxGradAccum), "micro-batches per optimizer step"},
    {RFA_FIELD(train, steps), at_least(1), "optimizer steps"},
    {RFA_FIELD(train, seed), kAny, "seed of every random stream (init, features, batches)"},
    {RFA_FIELD(train, log_every), at_least(1), "steps between log lines"},
    {RFA_FIELD(train, eval_every), at_least(0), "steps between evaluations; 0 = only at the end"},
    {RFA_FIELD(train, eval_batches), at_least(0),
     "0 = val loss over the whole validation split; N = over its first N x batch_size x context_length tokens"},
    {RFA_FIELD(train, stateful), kAny,
     "RFA kinds: B contiguous streams per micro-batch, each layer's state carried (detached) into the next step"},
    {RFA_FIELD(train, stateful_redraw), at_least(0),
     "stateful: 0 = train under the fixed (evaluation) random features; K = redraw every K steps, resetting the states"},
    {RFA_FIELD(train, precision), kAny,
     "fp32, or bf16: matrix products on bf16 copies, fp32 master weights (needs AVX512-BF16)"},
    {RFA_FIELD(train, thread_split), kAny,
     "batch: each thread its own sequences and gradient copy, summed after the backward; kernels: each kernel "
     "split over the threads; auto: batch when B is a multiple of the threads, the run is neither stateful nor DPO "
     "and the gradient copies take no more memory than the activations"},
    {RFA_FIELD(train, dpo_beta), above(0),
     "data.format preference: DPO's beta, the strength of the pull toward the reference (the --init-from model)"},
    {RFA_FIELD(train, init_from), kAny,
     "fine-tune: a run or checkpoint whose weights, architecture and tokenizer this run starts from; \"\" = random init"},

    {RFA_FIELD(optim, lr), above(0), "peak learning rate"},
    {RFA_FIELD(optim, lr_min), at_least(0), "learning rate at the end of the cosine decay; <= lr"},
    {RFA_FIELD(optim, warmup_steps), at_least(0), "linear warmup steps"},
    {RFA_FIELD(optim, beta1), kHalfOpenUnit, "AdamW beta1"},
    {RFA_FIELD(optim, beta2), kHalfOpenUnit, "AdamW beta2"},
    {RFA_FIELD(optim, eps), above(0), "AdamW epsilon"},
    {RFA_FIELD(optim, weight_decay), at_least(0), "decoupled weight decay, weight matrices only"},
    {RFA_FIELD(optim, grad_clip), at_least(0), "clip the global gradient norm to this; 0 = off"},
    {RFA_FIELD(optim, sigma_lr_scale), above(0),
     "the RFA kinds' learned sigma (inverse kernel width) update at lr times this: a kernel that starts wide and "
     "sharpens fast (docs/recall.md)"},
    {RFA_FIELD(optim, sigma_floor), at_least(0),
     "the RFA kinds' |sigma| held at or above this after every update, reached linearly over "
     "optim.sigma_floor_steps: a kernel forced to sharpen whatever the gradient says; 0 = off (docs/recall.md)"},
    {RFA_FIELD(optim, sigma_floor_steps), at_least(0),
     "updates over which optim.sigma_floor rises from 0 to its value; 0 = all of it from the first"},

    {RFA_FIELD(checkpoint, every), at_least(0), "steps between checkpoints; 0 = only at the end"},
    {RFA_FIELD(checkpoint, keep_last), at_least(1), "checkpoints kept besides the best"},
    {RFA_FIELD(checkpoint, keep_best), kAny, "also keep the checkpoint with the best validation loss"},
};

#undef RFA_FIELD

const char* const kSections[] = {"model", "attention", "tokenizer", "data", "train", "optim", "checkpoint"};

std::string_view section_of(std::string_view path) {
  size_t dot = path.find('.');
  return dot == std::string_view::npos ? std::string_view{} : path.substr(0, dot);
}
std::string_view leaf_of(std::string_view path) {
  size_t dot = path.find('.');
  return dot == std::string_view::npos ? path : path.substr(dot + 1);
}

// "in [1, 1024]": the key's bounds, within what its integer type holds.
template <typename T>
std::string integer_range_text(const ConfigAllowed& a) {
  using Wide = std::conditional_t<std::is_unsigned_v<T>, uint64_t, int64_t>;
  std::string lo = std::isfinite(a.min) ? number_text(a.min) : integer_text(Wide{std::numeric_limits<T>::min()});
  std::string hi = std::isfinite(a.max) ? number_text(a.max) : integer_text(Wide{std::numeric_limits<T>::max()});
  return fmt::format("in [{}, {}]", lo, hi);
}

bool parse_bool(const std::string& text, bool* value) {
  static const char* const yes[] = {"true", "True", "TRUE", "yes", "Yes", "on", "On"};
  static const char* const no[] = {"false", "False", "FALSE", "no", "No", "off", "Off"};
  for (const char* s : yes)
    if (text == s) return *value = true, true;
  for (const char* s : no)
    if (text == s) return *value = false, true;
  return false;
}

}  // namespace

std::span<const ConfigKey> config_keys() { return kKeys; }
std::span<const char* const> config_sections() { return kSections; }

const ConfigKey* config_key_find(std::string_view path) {
  for (const ConfigKey& key : kKeys)
    if (path == key.path) return &key;
  return nullptr;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string config_key_hint(std::string_view unknown) {
  // Score a candidate by the whole path, or by the leaf alone plus one for a
  // wrong section, so `train.lr` and a top-level `lr` both find `optim.lr`.
  std::string_view section = section_of(unknown), leaf = leaf_of(unknown);
  auto score = [&](std::string_view candidate) {
    size_t whole = edit_distance(unknown, candidate);
    size_t by_leaf = edit_distance(leaf, leaf_of(candidate)) + (section_of(candidate) == section ? 0 : 1);
    return std::min(whole, by_leaf);
  };
  std::string best;
  size_t best_score = SIZE_MAX;
  for (const ConfigKey& key : kKeys) {
    size_t s = score(key.path);
    if (s < best_score) best_score = s, best = key.path;
  }
  if (section.empty())  // a top-level key may be a misspelt section
    for (const char* name : kSections) {
      size_t s = edit_distance(unknown, name);
      if (s < best_score) best_score = s, best = name;
    }
  if (best_score <= std::max<size_t>(2, leaf.size() / 2)) return fmt::format("; did you mean '{}'?", best);

  bool known_section = std::find(std::begin(kSections), std::end(kSections), section) != std::end(kSections);
  std::string list;
  if (known_section) {
    for (const ConfigKey& key : kKeys)
      if (section_of(key.path) == section) list += fmt::format("{}{}", list.empty() ? "" : ", ", leaf_of(key.path));
    return fmt::format("; valid keys in '{}' are: {}", section, list);
  }
  for (const char* name : kSections) list += fmt::format("{}{}", list.empty() ? "" : ", ", name);
  return fmt::format("; the sections are: {}", list);
}

std::string config_key_expected(const ConfigKey& key) {
  return std::visit(
      [&key](auto ref) -> std::string {
        using T = std::remove_reference_t<decltype(ref(std::declval<Config&>()))>;
        if constexpr (std::is_same_v<T, bool>) return "true or false";
        else if constexpr (std::is_same_v<T, double>) return "a number";
        else if constexpr (std::is_integral_v<T>) return "an integer " + integer_range_text<T>(key.allowed);
        else if constexpr (std::is_same_v<T, std::string>) return "a string";
        else return "one of " + enum_choices(T{});
      },
      key.field);
}

std::string config_key_allowed_text(const ConfigKey& key) {
  const ConfigAllowed& a = key.allowed;
  if (a.list) return a.non_empty ? "non-empty; a list too" : "a string or a list";
  if (a.non_empty) return "non-empty";
  bool has_min = std::isfinite(a.min), has_max = std::isfinite(a.max);
  if (has_min && has_max)
    return fmt::format("in {}{}, {}{}", a.min_open ? '(' : '[', number_text(a.min), number_text(a.max),
                       a.max_open ? ')' : ']');
  if (has_min) return fmt::format("{} {}", a.min_open ? ">" : ">=", number_text(a.min));
  if (has_max) return fmt::format("{} {}", a.max_open ? "<" : "<=", number_text(a.max));
  return "";
}

std::string config_key_get(const ConfigKey& key, const Config& config) {
  // The accessors take a mutable Config only to share one pointer type with
  // config_key_set; reading through them does not modify anything.
  Config& c = const_cast<Config&>(config);
  return std::visit(
      [&](auto ref) -> std::string {
        const auto& v = ref(c);
        using T = std::remove_cvref_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
        else if constexpr (std::is_same_v<T, double>) {
          std::string s = fmt::format("{}", v);  // shortest text that reads back to the same double
          if (s.find_first_of(".en") == std::string::npos) s += ".0";  // keep it visibly a number
          return s;
        } else if constexpr (std::is_arithmetic_v<T>) return fmt::format("{}", v);
        else if constexpr (std::is_same_v<T, std::string>) return v;
        else return enum_name(v);
      },
      key.field);
}

bool config_key_set(const ConfigKey& key, const std::string& text, Config& config) {
  return std::visit(
      [&](auto ref) -> bool {
        using T = std::remove_reference_t<decltype(ref(config))>;
        T value{};
        bool ok;
        if constexpr (std::is_same_v<T, bool>) ok = parse_bool(text, &value);
        else if constexpr (std::is_same_v<T, double>) ok = parse_number(text, &value);
        else if constexpr (std::is_integral_v<T>) ok = parse_integer(text, &value);
        else if constexpr (std::is_same_v<T, std::string>) ok = true, value = text;
        else ok = enum_parse(text, &value);
        if (ok) ref(config) = value;
        return ok;
      },
      key.field);
}

}  // namespace rfa
