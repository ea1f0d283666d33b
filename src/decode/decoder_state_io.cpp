#include "decode/decoder_state_io.h"

#include <string>
#include <vector>

#include "checkpoint/safetensors.h"
#include "io/hash.h"
#include "core/error.h"

namespace rfa {
namespace {

std::string state_name(int l) { return "layers." + std::to_string(l) + ".state"; }


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
  safetensors_write(path, refs,
                    {{"rfa.content", "decode-state"},
                     {"position", std::to_string(dec.position())},
                     {"model_checksum", model_sum}});
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
  try {
    return std::stoll(state_meta(f, path, "position"));
  } catch (const std::exception&) {
    fail("{}: position '{}' is not a number", path, state_meta(f, path, "position"));
  }
}

}  // namespace

int64_t decoder_state_position(const std::string& path) { return state_position(safetensors_read(path), path); }

void decoder_state_load(const std::string& path, Decoder<float>& dec, const std::string& model_sum) {
  const std::string refusal = attention_state_save_refusal(dec.spec().attn);
  if (!refusal.empty()) fail("--load-state needs an RFA model: {}", refusal);
  SafetensorsFile f = safetensors_read(path);
  auto meta = [&](const char* key) -> const std::string& { return state_meta(f, path, key); };
  const int64_t position = state_position(f, path);
  if (meta("model_checksum") != model_sum)
    fail("{} was saved from another model (weights checksum {}, this model {}); continue with the model that "
         "wrote it",
         path, meta("model_checksum"), model_sum);
  std::vector<TensorSpec> expected;
  for (size_t l = 0; l < dec.attention_states().size(); ++l)
    expected.push_back({state_name(static_cast<int>(l)), DType::F32, attention_state_shape(dec.attention_states()[l])});
  expected.push_back({"logits", DType::F32, {dec.vocab()}});
  safetensors_validate(f, expected, path);
  for (size_t l = 0; l < dec.attention_states().size(); ++l) {
    AttentionState<float>& s = dec.attention_states()[l];
    int64_t n = 1;
    for (int64_t d : attention_state_shape(s)) n *= d;
    tensor_copy_to(*f.find(state_name(static_cast<int>(l))), attention_state_data(s), n);
  }
  std::vector<float> logits(static_cast<size_t>(dec.vocab()));
  tensor_copy_to(*f.find("logits"), logits.data(), dec.vocab());
  dec.set_position(position);
  dec.last_logits_restore(logits.data());
}

}  // namespace rfa
