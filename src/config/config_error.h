#pragma once
// A validation error that knows which keys it is about, so config_load can
// point at the file line or --set that gave the offending value.
#include <string>
#include <vector>

#include "core/error.h"

namespace rfa {

class ConfigKeyError : public Error {
 public:
  ConfigKeyError(std::vector<std::string> keys, const std::string& message)
      : Error(message), keys_(std::move(keys)) {}
  const std::vector<std::string>& keys() const { return keys_; }  // most to blame first

 private:
  std::vector<std::string> keys_;
};

template <typename... Args>
[[noreturn]] void fail_keys(std::vector<std::string> keys, fmt::format_string<Args...> format, Args&&... args) {
  throw ConfigKeyError(std::move(keys), fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace rfa
