#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "core/log.h"
#include "io/json.h"
#include "support/test_files.h"
#include "train/train_report.h"

using namespace rfa;

TEST_CASE("train report: durations read like a clock") {
  CHECK(duration_text(0.4) == "0s");
  CHECK(duration_text(59) == "59s");
  CHECK(duration_text(61) == "1m01s");
  CHECK(duration_text(3600 + 120) == "1h02m");
  CHECK(duration_text(-1) == "?");
}

TEST_CASE("train report: log text and JSON carry the same numbers") {
  TrainLogLine l;
  l.step = 250;
  l.total = 2000;
  l.loss = 2.123456;
  l.val_loss = 2.5;
  l.lr = 9.8e-4;
  l.grad_norm = 0.4321;
  l.tokens_per_s = 23456.4;
  l.ms_per_step = 21.34;
  l.eta_s = 37;
  l.elapsed_s = 12.5;
  std::string text = train_log_text(l);
  CHECK(text == "step 250/2000 | loss 2.1235 | val 2.5000 | lr 9.80e-04 | gnorm 0.432 | 23,456 tok/s | "
                "21.3 ms/step | eta 37s");
  JsonValue j = json_parse(train_log_json(l), "line");
  CHECK(j.find("type")->as_string("type") == "train");
  CHECK(j.find("step")->as_int64("step") == 250);
  CHECK(j.find("loss")->as_double("loss") == 2.123456);
  CHECK(j.find("val_loss")->as_double("val_loss") == 2.5);
  CHECK(j.find("tokens_per_s")->as_double("t") == 23456.4);
  l.val_loss = -1;  // no fresh evaluation: no val field
  CHECK(json_parse(train_log_json(l), "line").find("val_loss") == nullptr);
  JsonValue e = json_parse(eval_log_json(500, 1.5, 3.0), "eval");
  CHECK(e.find("type")->as_string("type") == "eval");
  CHECK(e.find("val_loss")->as_double("v") == 1.5);
}

TEST_CASE("train report: a metrics line that cannot be written is said once, not dropped in silence") {
  const std::string log_path = rfa::test::temp_file("metrics_full.log", "");
  log_add_file(log_path);
  MetricsFile full("/dev/full");  // every write fails with ENOSPC (a full disk)
  for (int i = 0; i < 3; ++i) full.write(R"({"type":"train","step":1})");
  log_flush();
  std::ifstream in(log_path);
  std::string line;
  int warnings = 0;
  while (std::getline(in, line))
    warnings += line.find("cannot append to /dev/full: No space left on device") != std::string::npos;
  CHECK(warnings == 1);
}
