#pragma once
// A request the server refuses, with the HTTP status and the OpenAI error fields it is
// reported with: {"error": {"message", "type", "param", "code"}}.
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace rfa {

class ServeError : public std::runtime_error {
 public:
  ServeError(int status, std::string type, std::string param, const std::string& message)
      : std::runtime_error(message), status(status), type(std::move(type)), param(std::move(param)) {}
  int status;
  std::string type;   // invalid_request_error, authentication_error, not_found_error, server_error, ...
  std::string param;  // the request field at fault, "" for none
};

// 400 invalid_request_error naming the field.
template <typename... Args>
[[noreturn]] void request_fail(std::string param, fmt::format_string<Args...> format, Args&&... args) {
  throw ServeError(400, "invalid_request_error", std::move(param), fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace rfa
