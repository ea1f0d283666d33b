#pragma once
// The Prometheus text exposition format (version 0.0.4): # HELP and # TYPE lines, then samples.
#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace rfa {

class MetricsText {
 public:
  void type(const std::string& name, const char* type, const char* help) {
    text_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  }
  void sample(const std::string& name, int64_t value, const std::string& labels = "") {
    text_ += labels.empty() ? fmt::format("{} {}\n", name, value) : fmt::format("{}{{{}}} {}\n", name, labels, value);
  }
  void sample(const std::string& name, double value) { text_ += fmt::format("{} {}\n", name, value); }
  void metric(const std::string& name, const char* type, const char* help, int64_t value) {
    this->type(name, type, help);
    sample(name, value);
  }
  void metric(const std::string& name, const char* type, const char* help, double value) {
    this->type(name, type, help);
    sample(name, value);
  }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

}  // namespace rfa
