#include "serve/api_key.h"

#include <cstddef>

namespace rfa {

bool secret_equal(std::string_view expected, std::string_view given) {
  // Every byte of `given` is compared (against expected's bytes cycled), whatever matched.
  volatile unsigned char diff = expected.size() == given.size() ? 0 : 1;
  const size_t n = expected.size();
  for (size_t i = 0; i < given.size(); ++i)
    diff = diff | static_cast<unsigned char>(given[i] ^ (n ? expected[i % n] : 0));
  return diff == 0 && n > 0;
}

std::string_view api_key_problem(std::string_view key, std::string_view authorization) {
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.empty())
    return "this server needs an API key: send the header 'Authorization: Bearer KEY' (the key given to --api-key)";
  if (authorization.substr(0, kBearer.size()) != kBearer)
    return "the Authorization header must read 'Bearer KEY'";
  if (!secret_equal(key, authorization.substr(kBearer.size()))) return "the API key is wrong";
  return "";
}

}  // namespace rfa
