#pragma once
// Logging. The only file that includes spdlog. Lines carry a "[module]" prefix:
//   log_info("train", "step {}/{} loss {:.4f}", step, total, loss);
// Never log inside a hot loop (training step, decode step).
#include <fmt/format.h>

#include <string>

namespace rfa {

enum class LogLevel { trace, debug, info, warn, error, off };

LogLevel log_level_parse(const std::string& name);  // throws Error naming the allowed levels
void log_setup(LogLevel level, const std::string& log_file);  // log_file "" = stderr only
void log_add_file(const std::string& path);  // also write to this file (e.g. a run directory's log)
void log_write(LogLevel level, const std::string& module, const std::string& message);
void log_flush();

template <typename... Args>
void log_info(const char* module, fmt::format_string<Args...> f, Args&&... args) {
  log_write(LogLevel::info, module, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void log_warn(const char* module, fmt::format_string<Args...> f, Args&&... args) {
  log_write(LogLevel::warn, module, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void log_error(const char* module, fmt::format_string<Args...> f, Args&&... args) {
  log_write(LogLevel::error, module, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void log_debug(const char* module, fmt::format_string<Args...> f, Args&&... args) {
  log_write(LogLevel::debug, module, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace rfa
