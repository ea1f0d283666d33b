#include "train/train_report.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "io/json.h"
#include "core/error.h"
#include "core/log.h"

namespace rfa {
namespace {

std::string thousands(double x) {
  std::string digits = fmt::format("{:.0f}", x), out;
  int n = static_cast<int>(digits.size());
  for (int i = 0; i < n; ++i) {
    if (i > 0 && (n - i) % 3 == 0 && digits[i - 1] != '-') out += ',';
    out += digits[static_cast<size_t>(i)];
  }
  return out;
}

}  // namespace

std::string duration_text(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  int64_t t = static_cast<int64_t>(std::llround(s));
  if (t >= 3600) return fmt::format("{}h{:02}m", t / 3600, (t % 3600) / 60);
  if (t >= 60) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}s", t);
}

std::string train_log_text(const TrainLogLine& l) {
  std::string val = l.val_loss >= 0 ? fmt::format(" | val {:.4f}", l.val_loss) : "";
  return fmt::format("step {}/{} | loss {:.4f}{} | lr {:.2e} | gnorm {:.3f} | {} tok/s | {:.1f} ms/step | eta {}",
                     l.step, l.total, l.loss, val, l.lr, l.grad_norm, thousands(l.tokens_per_s), l.ms_per_step,
                     duration_text(l.eta_s));
}

std::string train_log_json(const TrainLogLine& l) {
  std::string out = fmt::format("{{\"type\":\"train\",\"step\":{},\"total\":{},\"loss\":{}", l.step, l.total,
                                json_number(l.loss));
  if (l.val_loss >= 0) out += fmt::format(",\"val_loss\":{}", json_number(l.val_loss));
  out += fmt::format(",\"lr\":{},\"grad_norm\":{},\"tokens_per_s\":{},\"ms_per_step\":{},\"elapsed_s\":{}}}",
                     json_number(l.lr), json_number(l.grad_norm), json_number(l.tokens_per_s),
                     json_number(l.ms_per_step), json_number(l.elapsed_s));
  return out;
}

std::string eval_log_json(int64_t step, double val_loss, double elapsed_s,
                          const std::vector<std::pair<const char*, double>>& extra) {
  std::string fields;
  for (const auto& [name, value] : extra) fields += fmt::format(",\"{}\":{}", name, json_number(value));
  return fmt::format("{{\"type\":\"eval\",\"step\":{},\"val_loss\":{}{},\"elapsed_s\":{}}}", step,
                     json_number(val_loss), fields, json_number(elapsed_s));
}

MetricsFile::MetricsFile(const std::string& path, bool append) {
  path_ = path;
  file_ = std::fopen(path.c_str(), append ? "a" : "w");
  if (!file_) fail("cannot open metrics file {}: {}", path, std::strerror(errno));
}

MetricsFile::~MetricsFile() {
  if (file_) std::fclose(file_);
}

void MetricsFile::write(const std::string& line) {
  errno = 0;
  const bool ok = std::fputs(line.c_str(), file_) >= 0 && std::fputc('\n', file_) != EOF && std::fflush(file_) == 0;
  if (ok || warned_) return;
  // Said once, not fatal: the checkpoints are what a run must keep, and their writes fail loudly.
  warned_ = true;
  log_warn("train", "cannot append to {}: {}; its lines are lost from here (the run goes on; free space there)",
           path_, errno != 0 ? std::strerror(errno) : "write failed");
}

ProgressLine::ProgressLine() : enabled_(::isatty(STDERR_FILENO) == 1) {}

void ProgressLine::show(const std::string& text) {
  if (!enabled_) return;
  std::fprintf(stderr, "\r\033[K%s", text.c_str());
  std::fflush(stderr);
  visible_ = true;
}

void ProgressLine::clear() {
  if (!enabled_ || !visible_) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  visible_ = false;
}

}  // namespace rfa
