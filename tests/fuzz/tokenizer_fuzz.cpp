// A tokenizer model file as our wrapper loads it (SentencePiece parses the
// protobuf), then a short text encoded and decoded with it, and the training
// input it records read by our own protobuf reader (tokenizer/model_proto.h).
#include <string>

#include "fuzz_support.h"
#include "tokenizer/model_proto.h"
#include "tokenizer/tokenizer.h"

using namespace rfa;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::run([&] {
    model_proto_training_input(std::string_view(reinterpret_cast<const char*>(data), size));  // any bytes
    const Tokenizer t = Tokenizer::from_bytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz.model");
    const std::vector<int32_t> ids = t.encode("Line 7: the quick brown fox, caf\xc3\xa9 \xe2\x96\x81 \xf0\x9f\x98\x80\n");
    t.decode(ids);
    for (int32_t id : ids) t.decode_token(id);
  });
}
