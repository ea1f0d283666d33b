#include "decode/decoder_state_io.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "checkpoint/file_io.h"
#include "checkpoint/safetensors.h"
#include "checkpoint/xxhash64.h"
#include "core/checksum_policy.h"
#include "core/error.h"

namespace rfa {
namespace {

std::string state_name(int l) { return "layers." + std::to_string(l) + ".state"; }

std::vector<int64_t> state_shape(const RfaState<float>& s) { return {s.B, s.H, s.F, s.Dh + 1}; }

}  // namespace

std::string model_checksum(Model<float>& model) {
  uint64_t h = xxhash64(model.params(), sizeof(float) * static_cast<size_t>(model.param_size()));
  h = xxhash64(model.random_fixed(), sizeof(float) * static_cast<size_t>(model.random_size), h);
  return hash_hex(h);
}

void decoder_state_save(const std::string& path, const Decoder<float>& dec, const std::string& model_sum) {
  if (!dec.spec().is_rfa())
    fail("--save-state needs an RFA model: a softmax model's state is a KV cache that grows with the text");
  if (dec.batch() != 1) fail("--save-state saves one sequence; the decoder has batch {}", dec.batch());
  if (dec.last_logits() == nullptr) fail("--save-state: nothing has been decoded yet");
  std::vector<TensorRef> refs;
  for (size_t l = 0; l < dec.rfa_states().size(); ++l) {
    const RfaState<float>& s = dec.rfa_states()[l];
    refs.push_back({state_name(static_cast<int>(l)), DType::F32, state_shape(s), s.S.data()});
  }
  refs.push_back({"logits", DType::F32, {dec.vocab()}, dec.last_logits()});
  safetensors_write(path, refs,
                    {{"rfa.content", "decode-state"},
                     {"position", std::to_string(dec.position())},
                     {"model_checksum", model_sum}});
}

void decoder_state_load(const std::string& path, Decoder<float>& dec, const std::string& model_sum) {
  if (!dec.spec().is_rfa()) fail("--load-state needs an RFA model; this one is softmax");
  decoder_state_restore(file_read_bytes(path), path, dec, model_sum);
}

void decoder_state_restore(const std::vector<uint8_t>& bytes, const std::string& path, Decoder<float>& dec,
                           const std::string& model_sum) {
  if (!dec.spec().is_rfa()) fail("--load-state needs an RFA model; this one is softmax");
  SafetensorsFile f = safetensors_parse(bytes, path);
  auto meta = [&](const char* key) -> const std::string& {
    auto it = f.metadata.find(key);
    if (it == f.metadata.end()) fail("{} is not a decoder state file (no '{}' in its metadata)", path, key);
    return it->second;
  };
  if (meta("rfa.content") != "decode-state") fail("{} is not a decoder state file", path);
  if (checksums_enforced() && meta("model_checksum") != model_sum)
    fail("{} was saved from another model (weights checksum {}, this model {}); continue with the model that "
         "wrote it",
         path, meta("model_checksum"), model_sum);
  std::vector<TensorSpec> expected;
  for (size_t l = 0; l < dec.rfa_states().size(); ++l)
    expected.push_back({state_name(static_cast<int>(l)), DType::F32, state_shape(dec.rfa_states()[l])});
  expected.push_back({"logits", DType::F32, {dec.vocab()}});
  safetensors_validate(f, expected, path);
  const std::string& position_text = meta("position");
  int64_t position = -1;
  const auto [end, ec] = std::from_chars(position_text.data(), position_text.data() + position_text.size(), position);
  if (ec != std::errc() || end != position_text.data() + position_text.size() || position < 0 ||
      position >= (int64_t{1} << 62))
    fail("{}: position '{}' is not a count of tokens (a whole number >= 0); the file is corrupt", path,
         position_text);
  // A state saved from a model's forward pass is finite; NaN or inf would only turn every
  // next token into noise (and feed NaN to exp), so such a file is refused.
  std::vector<float> values;
  auto restore = [&](const std::string& name, float* dst, int64_t count) {
    const Tensor& t = *f.find(name);
    values.resize(static_cast<size_t>(count));
    tensor_copy_to(t, values.data(), count);
    for (int64_t i = 0; i < count; ++i)
      if (!std::isfinite(values[static_cast<size_t>(i)]))
        fail("{}: tensor '{}' holds {} at index {}; a saved decoder state is finite, so the file is corrupt", path,
             name, values[static_cast<size_t>(i)], i);
    std::copy(values.begin(), values.end(), dst);
  };
  for (size_t l = 0; l < dec.rfa_states().size(); ++l) {
    RfaState<float>& s = dec.rfa_states()[l];
    restore(state_name(static_cast<int>(l)), s.S.data(), static_cast<int64_t>(s.S.size()));
  }
  std::vector<float> logits(static_cast<size_t>(dec.vocab()));
  restore("logits", logits.data(), dec.vocab());
  dec.set_position(position);
  dec.last_logits_restore(logits.data());
}

}  // namespace rfa
