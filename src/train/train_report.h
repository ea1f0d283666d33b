#pragma once
// What a training run tells the outside world between steps: metrics.jsonl
// (one JSON object per line, per logged step and per evaluation) and, when
// stderr is a terminal, a live progress line redrawn in place.
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace rfa {

struct TrainLogLine {
  int64_t step = 0;        // 1-based optimizer steps completed
  int64_t total = 0;
  double loss = 0;         // mean train loss since the last log line
  double val_loss = -1;    // < 0: no fresh evaluation at this step
  double lr = 0;
  double grad_norm = 0;
  double tokens_per_s = 0;
  double ms_per_step = 0;
  double eta_s = 0;
  double elapsed_s = 0;
};

// "1h02m", "3m05s", "12s"
std::string duration_text(double seconds);
// "step 250/2000 | loss 2.1234 | val 2.2345 | lr 9.80e-04 | gnorm 0.43 | 23,456 tok/s | 21.3 ms/step | eta 37s"
std::string train_log_text(const TrainLogLine& line);
// {"type":"train","step":250,...}
std::string train_log_json(const TrainLogLine& line);
// {"type":"eval","step":250,"val_loss":2.2345,"elapsed_s":...}, with the `extra` fields after
// val_loss (instruction data: "val_prompt_loss"; preference pairs: "val_pair_accuracy", ...).
std::string eval_log_json(int64_t step, double val_loss, double elapsed_s,
                          const std::vector<std::pair<const char*, double>>& extra = {});

// Appends lines to metrics.jsonl, flushing each so `tail -f` and crashes see them.
class MetricsFile {
 public:
  // Truncates (or appends, for a resumed run); throws Error if it cannot be opened.
  explicit MetricsFile(const std::string& path, bool append = false);
  ~MetricsFile();
  MetricsFile(const MetricsFile&) = delete;
  MetricsFile& operator=(const MetricsFile&) = delete;
  void write(const std::string& json_line);  // a failed write is logged once as a warning

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  bool warned_ = false;
};

// The live line on an interactive stderr; every call is a no-op otherwise.
class ProgressLine {
 public:
  ProgressLine();  // enabled iff isatty(stderr)
  void show(const std::string& text);  // redraws in place
  void clear();                        // erases it (call before a log line)
  bool enabled() const { return enabled_; }

 private:
  bool enabled_ = false;
  bool visible_ = false;
};

}  // namespace rfa
