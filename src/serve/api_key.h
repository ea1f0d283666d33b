#pragma once
// The server's API key, checked on every request but GET /health as
// "Authorization: Bearer KEY", compared in time that does not depend on where the two differ.
#include <string_view>

namespace rfa {

bool secret_equal(std::string_view expected, std::string_view given);
// "" when the Authorization header value carries `key`; else what is wrong, for a 401.
std::string_view api_key_problem(std::string_view key, std::string_view authorization);

}  // namespace rfa
