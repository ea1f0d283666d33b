#include "decode/decoder_state_io.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "checkpoint/safetensors.h"
#include "config/config_enums.h"
#include "core/checksum_policy.h"
#include "core/error.h"
#include "io/file_io.h"
#include "io/file_util.h"
#include "io/hash.h"

namespace rfa {
namespace {

// "layers.{l}.state": the layer's state tensor as the file names it.
std::string tensor_name(size_t l, const AttentionStateTensor& t) { return fmt::format("layers.{}.{}", l, t.name); }

// (1, row shape...): one row of the tensor.
std::vector<int64_t> row_shape(const AttentionStateTensor& t) {
  std::vector<int64_t> shape = {1};
  shape.insert(shape.end(), t.shape.begin(), t.shape.end());
  return shape;
}

// What the sums in a state mean besides the weights (which model_checksum covers): the
// positions q and k were rotated by and the time discount the written features were scaled
// by (attention_state_form). The same weights can meet another config (a checkpoint from
// before state.json recorded config.yaml's checksum, edited to add a horizon as
// docs/feature-gate.md did; weights copied into another run); continuing a state under
// another form would mix two weightings of the text. Layers alike: their one form;
// else each layer's, "layer 0: ...; layer 1: ...".
std::string state_form(const Decoder<float>& dec) {
  const auto& states = dec.attention_states();
  std::string first = attention_state_form(states[0].spec()), all;
  bool alike = true;
  for (size_t l = 0; l < states.size(); ++l) {
    const std::string form = attention_state_form(states[l].spec());
    alike = alike && form == first;
    all += fmt::format("{}layer {}: {}", l ? "; " : "", l, form);
  }
  return alike ? first : all;
}

// "" when every layer's state can be saved; else why not, for `flag`.
std::string save_refusal(const Decoder<float>& dec) {
  const auto& states = dec.attention_states();
  bool alike = true;  // one kind in every layer
  for (const AttentionState<float>& st : states) alike = alike && st.spec().kind == states[0].spec().kind;
  for (size_t l = 0; l < states.size(); ++l) {
    const std::string refusal = attention_state_save_refusal(states[l].spec());
    if (refusal.empty()) continue;
    if (alike) return fmt::format("needs an RFA model: {}", refusal);
    return fmt::format("needs every layer to keep a fixed-size state, and layer {} ({}) does not: {}", l,
                       enum_name(states[l].spec().kind), refusal);
  }
  return "";
}

}  // namespace

std::string model_checksum(Model<float>& model) {
  model.matrices_check_kept("model_checksum");  // take it before a decoder releases them
  uint64_t h = xxhash64(model.params(), sizeof(float) * static_cast<size_t>(model.param_size()));
  h = xxhash64(model.random_fixed(), sizeof(float) * static_cast<size_t>(model.random_size), h);
  return hash_hex(h);
}

void decoder_state_save(const std::string& path, const Decoder<float>& dec, const std::string& model_sum, int row) {
  const std::string refusal = save_refusal(dec);
  if (!refusal.empty()) fail("--save-state {}", refusal);
  if (row < 0 || row >= dec.batch()) fail("--save-state: row {} outside the decoder's batch of {}", row, dec.batch());
  if (dec.row_logits(row) == nullptr) fail("--save-state: nothing has been decoded yet");
  std::vector<TensorRef> refs;
  const auto& states = dec.attention_states();
  for (size_t l = 0; l < states.size(); ++l)
    for (size_t i = 0; i < states[l].tensors().size(); ++i) {
      const AttentionStateTensor& t = states[l].tensors()[i];
      refs.push_back({tensor_name(l, t), DType::F32, row_shape(t), states[l].tensor_row(int(i), row)});
    }
  refs.push_back({"logits", DType::F32, {dec.vocab()}, dec.row_logits(row)});
  // Written under a temporary name and renamed when complete: a full disk or a kill leaves
  // neither a half file under `path` nor a damaged earlier state there (it was written in place).
  file_temp_remove_stale(path);  // the temporaries of earlier writers that were killed
  const std::string temp = file_temp_path(path);
  try {
    safetensors_write(temp, refs,
                      {{"rfa.content", "decode-state"},
                       {"position", std::to_string(dec.position(row))},
                       {"model_checksum", model_sum},
                       {"attention", state_form(dec)}});
  } catch (const Error& e) {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    fail("--save-state {}: {}; nothing was saved there{}", path, e.what(),
         std::filesystem::exists(path, ignored) ? " (the earlier state in it is intact)" : "");
  }
  file_commit(temp, path);
}

namespace {

// The file's metadata entry `key`; throws Error when it is missing.
const std::string& state_meta(const SafetensorsFile& f, const std::string& path, const char* key) {
  auto it = f.metadata.find(key);
  if (it == f.metadata.end()) fail("{} is not a decoder state file (no '{}' in its metadata)", path, key);
  return it->second;
}

int64_t state_position(const SafetensorsFile& f, const std::string& path) {
  if (state_meta(f, path, "rfa.content") != "decode-state") fail("{} is not a decoder state file", path);
  // The whole text a whole number (std::stoll took '7x' and '-3', which then failed an assert).
  const std::string& text = state_meta(f, path, "position");
  int64_t position = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), position);
  if (ec != std::errc() || end != text.data() + text.size() || position < 0 || position >= (int64_t{1} << 62))
    fail("{}: position '{}' is not a count of tokens (a whole number >= 0); the file is corrupt", path, text);
  return position;
}

}  // namespace

int64_t decoder_state_position(const std::string& path) { return state_position(safetensors_read(path), path); }

void decoder_state_load(const std::string& path, Decoder<float>& dec, const std::string& model_sum, int row) {
  const std::string refusal = save_refusal(dec);
  if (!refusal.empty()) fail("--load-state {}", refusal);
  decoder_state_restore(file_read_bytes(path), path, dec, model_sum, row);
}

void decoder_state_restore(const std::vector<uint8_t>& bytes, const std::string& path, Decoder<float>& dec,
                           const std::string& model_sum, int row) {
  const std::string refusal = save_refusal(dec);
  if (!refusal.empty()) fail("--load-state {}", refusal);
  if (row < 0 || row >= dec.batch()) fail("--load-state: row {} outside the decoder's batch of {}", row, dec.batch());
  SafetensorsFile f = safetensors_parse(bytes, path);
  auto meta = [&](const char* key) -> const std::string& { return state_meta(f, path, key); };
  const int64_t position = state_position(f, path);
  if (checksums_enforced() && meta("model_checksum") != model_sum)
    fail("{} was saved from another model (weights checksum {}, this model {}); continue with the model that "
         "wrote it",
         path, meta("model_checksum"), model_sum);
  // Files written before the form was recorded have no entry: their weights checksum stands alone.
  if (auto it = f.metadata.find("attention"); it != f.metadata.end() && it->second != state_form(dec))
    fail("{} was saved with {}, and this model's config has {}; the state's sums are weighted by the former. "
         "Continue with the config that wrote it (attention.positions, attention.rope_theta, "
         "attention.time_discount, attention.time_discount_c, attention.time_discount_horizon)",
         path, it->second, state_form(dec));
  auto& states = dec.attention_states();
  std::vector<TensorSpec> expected;
  for (size_t l = 0; l < states.size(); ++l)
    for (const AttentionStateTensor& t : states[l].tensors())
      expected.push_back({tensor_name(l, t), DType::F32, row_shape(t)});
  expected.push_back({"logits", DType::F32, {dec.vocab()}});
  safetensors_validate(f, expected, path);
  // A state saved from a model's forward pass is finite; NaN or inf would only turn every
  // next token into noise (and feed NaN to exp; fuzzing found it), so such a file is refused.
  // Everything is checked before the row changes.
  for (const TensorSpec& spec : expected) {
    const Tensor& t = *f.find(spec.name);
    const int64_t count = static_cast<int64_t>(t.bytes.size() / sizeof(float));
    for (int64_t i = 0; i < count; ++i) {
      float x;
      std::memcpy(&x, t.bytes.data() + size_t(i) * sizeof(float), sizeof(float));
      if (!std::isfinite(x))
        fail("{}: tensor '{}' holds {} at index {}; a saved decoder state is finite, so the file is corrupt", path,
             spec.name, x, i);
    }
  }
  dec.reset_row(row);
  for (size_t l = 0; l < states.size(); ++l)
    for (size_t i = 0; i < states[l].tensors().size(); ++i) {
      const AttentionStateTensor& t = states[l].tensors()[i];
      tensor_copy_to(*f.find(tensor_name(l, t)), states[l].tensor_row(int(i), row), t.size());
    }
  std::vector<float> logits(static_cast<size_t>(dec.vocab()));
  tensor_copy_to(*f.find("logits"), logits.data(), dec.vocab());
  dec.set_position(row, position);
  dec.row_logits_restore(row, logits.data());
}

}  // namespace rfa
