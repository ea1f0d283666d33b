#pragma once
// The table of every configuration key. Reading (YAML and --set), validation
// of single values, the dump and the README's key table all walk this one
// table, so they cannot drift apart. Cross-key rules live in config_validate.cpp.
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "config/config.h"

namespace rfa {

// Upper bounds of sizes, far beyond any model this CPU trainer can hold: they
// keep each dimension, 2 * ffn_hidden and 8 * d_model inside a 32-bit int.
// Whether a model fits the machine is the memory estimate's call
// (model/memory_estimate.h), not these bounds'.
inline constexpr int kMaxVocab = 1 << 24;       // model.vocab_size, tokenizer.vocab_size
inline constexpr int kMaxLayers = 1024;         // model.n_layers
inline constexpr int kMaxWidth = 1 << 16;       // model.d_model, attention.num_features
inline constexpr int kMaxFfnHidden = 1 << 20;   // model.ffn_hidden
inline constexpr int kMaxLength = 1 << 20;      // model.context_length, attention.chunk_size
// Micro-batches per step: one step of 2^16 micro-batches is already hours of
// work for the smallest model; past that a value is a typo.
inline constexpr int kMaxGradAccum = 1 << 16;

// A key reaches its field through a plain function returning a reference:
// sections are nested structs, which member pointers cannot chain.
template <typename T>
using FieldRef = T& (*)(Config&);

using ConfigField =
    std::variant<FieldRef<int>, FieldRef<int64_t>, FieldRef<uint64_t>, FieldRef<double>, FieldRef<bool>,
                 FieldRef<std::string>, FieldRef<AttentionKind>, FieldRef<FeatureMapKind>,
                 FieldRef<PositionKind>, FieldRef<TokenizerKind>, FieldRef<Precision>, FieldRef<ThreadSplit>, FieldRef<GateKind>,
                 FieldRef<TimeDiscountKind>, FieldRef<DataFormat>, FieldRef<DocumentBoundaries>, FieldRef<Packing>,
                 FieldRef<PromptTemplate>>;

// What a single value may be; config_validate checks it. Numbers: min/max with
// open or closed ends (infinite = unbounded). Strings: non_empty, and list: paths
// separated by ',', which a YAML file may also give as a sequence ('[a.txt, b.txt]' or
// '- a.txt' lines), read as its entries joined by ','.
struct ConfigAllowed {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_open = false;
  bool max_open = false;
  bool non_empty = false;
  bool list = false;
};

struct ConfigKey {
  const char* path;  // "model.n_layers": section, dot, field
  ConfigField field;
  ConfigAllowed allowed;
  const char* help;  // one line, shown in the dump and the README
};

std::span<const ConfigKey> config_keys();
std::span<const char* const> config_sections();  // "model", "attention", ... in table order
const ConfigKey* config_key_find(std::string_view path);  // nullptr when unknown

// For an unknown key: "; did you mean 'model.n_layers'?" (closest by edit
// distance), or a list of the valid keys when nothing is close.
std::string config_key_hint(std::string_view unknown_path);

// "an integer in [1, 1024]" (the key's bounds within its type's), "a number", "true or false",
// "a string", "one of softmax|rfa|rfa_gate".
std::string config_key_expected(const ConfigKey& key);
// "> 0", "in (0, 1)", "non-empty"; "" when anything of the right type goes.
std::string config_key_allowed_text(const ConfigKey& key);

// The value as text, unquoted: what the dump writes and error messages quote.
std::string config_key_get(const ConfigKey& key, const Config& config);
// Parses `text` as the key's type into `config`; false (config untouched) if it does not parse.
bool config_key_set(const ConfigKey& key, const std::string& text, Config& config);
// "" when the key's value in `config` is within its bounds; else the message naming the key,
// the value and what is allowed (config_validate's, for a value checked elsewhere too).
std::string config_key_check(const ConfigKey& key, const Config& config);

size_t edit_distance(std::string_view a, std::string_view b);  // Levenshtein

}  // namespace rfa
