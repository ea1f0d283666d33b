// state.json (through the JSON reader), and its round trip: an accepted state
// serialises to a file that reads back to the same text.
#include <string_view>

#include "checkpoint/train_state.h"
#include "fuzz_support.h"

using namespace rfa;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::run([&] {
    const TrainState s = train_state_parse(std::string_view(reinterpret_cast<const char*>(data), size), "state.json");
    const std::string text = train_state_serialize(s);
    if (train_state_serialize(train_state_parse(text, "serialised state.json")) != text)
      fuzz::violated("state.json does not round-trip");
  });
}
