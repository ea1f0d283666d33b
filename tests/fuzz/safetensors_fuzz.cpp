// safetensors: the 8-byte header length, the JSON header, the tensor table (dtypes,
// shapes, offsets tiling the data), then what a model load does with an accepted
// file: validation against the fixture model's tensor list and the copy into it.
#include <memory>

#include "checkpoint/safetensors.h"
#include "config/config_load.h"
#include "io/file_io.h"
#include "fuzz_support.h"
#include "model/model.h"
#include "model/model_io.h"
#include "model/model_spec.h"

using namespace rfa;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Config config = [] {
    Config c = config_parse(file_read_text(fuzz::fixture_dir() + "/config.yaml"), "fixture config.yaml");
    c.model.vocab_size = 299;  // the fixture tokenizer's
    return c;
  }();
  static Model<float> model(model_spec_make(config.model, config.attention));
  return fuzz::run([&] {
    const SafetensorsFile file = safetensors_parse(std::vector<uint8_t>(data, data + size), "fuzz.safetensors");
    safetensors_validate(file, model_tensor_specs(model.spec), "fuzz.safetensors");
    model_tensors_load(model, file);
  });
}
