#include "core/log.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "core/error.h"

namespace rfa {
namespace {

spdlog::level::level_enum to_spdlog(LogLevel level) {
  switch (level) {
    case LogLevel::trace: return spdlog::level::trace;
    case LogLevel::debug: return spdlog::level::debug;
    case LogLevel::info: return spdlog::level::info;
    case LogLevel::warn: return spdlog::level::warn;
    case LogLevel::error: return spdlog::level::err;
    case LogLevel::off: return spdlog::level::off;
  }
  return spdlog::level::info;
}

std::shared_ptr<spdlog::logger>& logger() {
  static std::shared_ptr<spdlog::logger> instance = [] {
    auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    auto l = std::make_shared<spdlog::logger>("rfa", sink);
    l->set_pattern("%Y-%m-%d %H:%M:%S %^%l%$ %v");
    return l;
  }();
  return instance;
}

}  // namespace

LogLevel log_level_parse(const std::string& name) {
  if (name == "trace") return LogLevel::trace;
  if (name == "debug") return LogLevel::debug;
  if (name == "info") return LogLevel::info;
  if (name == "warn" || name == "warning") return LogLevel::warn;
  if (name == "error") return LogLevel::error;
  if (name == "off") return LogLevel::off;
  fail("--log-level '{}' is not a level; use one of trace, debug, info, warn, error, off", name);
}

void log_setup(LogLevel level, const std::string& log_file) {
  logger()->set_level(to_spdlog(level));
  if (!log_file.empty()) log_add_file(log_file);
}

void log_add_file(const std::string& path) {
  try {
    auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, /*truncate=*/false);
    sink->set_pattern("%Y-%m-%d %H:%M:%S.%e %l %v");
    logger()->sinks().push_back(sink);
  } catch (const spdlog::spdlog_ex& e) {
    fail("cannot open log file '{}': {}", path, e.what());
  }
}

void log_write(LogLevel level, const std::string& module, const std::string& message) {
  logger()->log(to_spdlog(level), "[{}] {}", module, message);
}

void log_flush() { logger()->flush(); }

}  // namespace rfa
