// A YAML config through the project's loader and validation (config_parse is
// config_load without the file read), and the dump round trip: an accepted
// config dumps to YAML that parses back to the same dump.
#include <string>

#include "config/config_load.h"
#include "fuzz_support.h"

using namespace rfa;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::run([&] {
    const Config c = config_parse(std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
    const std::string dump = config_dump(c);
    if (config_dump(config_parse(dump, "dump of fuzz.yaml")) != dump) fuzz::violated("config dump does not round-trip");
  });
}
