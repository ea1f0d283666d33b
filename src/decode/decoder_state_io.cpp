#include "decode/decoder_state_io.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "checkpoint/safetensors.h"
#include "core/checksum_policy.h"
#include "core/error.h"
#include "io/file_io.h"
#include "io/file_util.h"
#include "io/hash.h"

namespace rfa {
namespace {

std::string state_name(int l) { return "layers." + std::to_string(l) + ".state"; }

// What the sums in a state mean besides the weights (which model_checksum covers): the
// positions q and k were rotated by and the time discount the written features were scaled
// by. The same weights can meet another config (a checkpoint from before state.json recorded
// config.yaml's checksum, edited to add a horizon as docs/feature-gate.md did; weights copied
// into another run); continuing a state under another form would mix two weightings of the text.
std::string state_form(const AttentionSpec& a) {
  std::string out = a.rope ? fmt::format("rope theta {}", a.rope_theta) : std::string("no positions");
  if (!a.rfa.time_discount) return out + ", no time discount";
  return out + fmt::format(", time discount log(t + {}), horizon {}", a.rfa.discount_c, a.rfa.discount_horizon);
}

}  // namespace

std::string model_checksum(Model<float>& model) {
  uint64_t h = xxhash64(model.params(), sizeof(float) * static_cast<size_t>(model.param_size()));
  h = xxhash64(model.random_fixed(), sizeof(float) * static_cast<size_t>(model.random_size), h);
  return hash_hex(h);
}

void decoder_state_save(const std::string& path, const Decoder<float>& dec, const std::string& model_sum) {
  const std::string refusal = attention_state_save_refusal(dec.spec().attn);
  if (!refusal.empty()) fail("--save-state needs an RFA model: {}", refusal);
  if (dec.batch() != 1) fail("--save-state saves one sequence; the decoder has batch {}", dec.batch());
  if (dec.last_logits() == nullptr) fail("--save-state: nothing has been decoded yet");
  std::vector<TensorRef> refs;
  for (size_t l = 0; l < dec.attention_states().size(); ++l) {
    const AttentionState<float>& s = dec.attention_states()[l];
    refs.push_back({state_name(static_cast<int>(l)), DType::F32, attention_state_shape(s), attention_state_data(s)});
  }
  refs.push_back({"logits", DType::F32, {dec.vocab()}, dec.last_logits()});
  // Written under a temporary name and renamed when complete: a full disk or a kill leaves
  // neither a half file under `path` nor a damaged earlier state there (it was written in place).
  file_temp_remove_stale(path);  // the temporaries of earlier writers that were killed
  const std::string temp = file_temp_path(path);
  try {
    safetensors_write(temp, refs,
                      {{"rfa.content", "decode-state"},
                       {"position", std::to_string(dec.position())},
                       {"model_checksum", model_sum},
                       {"attention", state_form(dec.spec().attn)}});
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

void decoder_state_load(const std::string& path, Decoder<float>& dec, const std::string& model_sum) {
  const std::string refusal = attention_state_save_refusal(dec.spec().attn);
  if (!refusal.empty()) fail("--load-state needs an RFA model: {}", refusal);
  decoder_state_restore(file_read_bytes(path), path, dec, model_sum);
}

void decoder_state_restore(const std::vector<uint8_t>& bytes, const std::string& path, Decoder<float>& dec,
                           const std::string& model_sum) {
  const std::string refusal = attention_state_save_refusal(dec.spec().attn);
  if (!refusal.empty()) fail("--load-state needs an RFA model: {}", refusal);
  SafetensorsFile f = safetensors_parse(bytes, path);
  auto meta = [&](const char* key) -> const std::string& { return state_meta(f, path, key); };
  const int64_t position = state_position(f, path);
  if (checksums_enforced() && meta("model_checksum") != model_sum)
    fail("{} was saved from another model (weights checksum {}, this model {}); continue with the model that "
         "wrote it",
         path, meta("model_checksum"), model_sum);
  // Files written before the form was recorded have no entry: their weights checksum stands alone.
  if (auto it = f.metadata.find("attention"); it != f.metadata.end() && it->second != state_form(dec.spec().attn))
    fail("{} was saved with {}, and this model's config has {}; the state's sums are weighted by the former. "
         "Continue with the config that wrote it (attention.positions, attention.rope_theta, "
         "attention.time_discount, attention.time_discount_c, attention.time_discount_horizon)",
         path, it->second, state_form(dec.spec().attn));
  std::vector<TensorSpec> expected;
  for (size_t l = 0; l < dec.attention_states().size(); ++l)
    expected.push_back({state_name(static_cast<int>(l)), DType::F32, attention_state_shape(dec.attention_states()[l])});
  expected.push_back({"logits", DType::F32, {dec.vocab()}});
  safetensors_validate(f, expected, path);
  // A state saved from a model's forward pass is finite; NaN or inf would only turn every
  // next token into noise (and feed NaN to exp; fuzzing found it), so such a file is refused.
  std::vector<float> values;
  auto restore = [&](const std::string& name, float* dst, int64_t count) {
    values.resize(static_cast<size_t>(count));
    tensor_copy_to(*f.find(name), values.data(), count);
    for (int64_t i = 0; i < count; ++i)
      if (!std::isfinite(values[static_cast<size_t>(i)]))
        fail("{}: tensor '{}' holds {} at index {}; a saved decoder state is finite, so the file is corrupt", path,
             name, values[static_cast<size_t>(i)], i);
    std::copy(values.begin(), values.end(), dst);
  };
  for (size_t l = 0; l < dec.attention_states().size(); ++l) {
    AttentionState<float>& s = dec.attention_states()[l];
    int64_t n = 1;
    for (int64_t d : attention_state_shape(s)) n *= d;
    restore(state_name(static_cast<int>(l)), attention_state_data(s), n);
  }
  std::vector<float> logits(static_cast<size_t>(dec.vocab()));
  restore("logits", logits.data(), dec.vocab());
  dec.set_position(position);
  dec.last_logits_restore(logits.data());
}

}  // namespace rfa
