// A decode state (--load-state) restored into the fixture model's decoder, then
// two tokens generated from it, as `rfa generate --load-state` does.
#include <memory>

#include "decode/decoder.h"
#include "decode/decoder_state_io.h"
#include "decode/generate.h"
#include "decode/sampler.h"
#include "fuzz_support.h"
#include "model/model_load.h"

using namespace rfa;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static LoadedModel loaded = model_load(fuzz::fixture_dir());
  static const std::string sum = model_checksum(*loaded.model);
  return fuzz::run([&] {
    Decoder<float> dec(*loaded.model, DecoderOptions{});
    decoder_state_restore(std::vector<uint8_t>(data, data + size), "fuzz.state", dec, sum);
    SamplerConfig sc;
    sc.seed = 1;
    Sampler sampler(dec.vocab(), sc);
    generate(dec, std::span<Sampler>(&sampler, 1), {}, 2, [](int, int32_t) {});
  });
}
