// A token file: its length, the 64-byte header and the scan of every token id.
#include "data/token_file_format.h"
#include "fuzz_support.h"

using namespace rfa;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::run([&] { token_file_check(data, size, "fuzz.tokens"); });
}
