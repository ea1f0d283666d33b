// rfa: train and run RFA language models on the CPU.
#include <CLI/CLI.hpp>

#include <exception>
#include <string>

#include "cli/commands.h"
#include "core/error.h"
#include "core/log.h"
#include "core/parallel.h"

int main(int argc, char** argv) {
  using namespace rfa;
  CLI::App app{"rfa: train, evaluate and sample Random Feature Attention language models on the CPU"};
  app.set_version_flag("--version", std::string("rfa ") + RFA_VERSION);
  app.require_subcommand(1);

  int threads = 0;
  std::string log_level = "info";
  std::string log_file;
  app.add_option("--threads", threads, "Worker threads (default: physical cores)")->check(CLI::Range(0, 1024));
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")->capture_default_str();
  app.add_option("--log-file", log_file, "Also append log lines to this file");

  CommandAction action;
  // Subcommands register here (see cli/commands.h).
  register_tokenizer_command(app, action);
  register_data_command(app, action);
  register_train_command(app, action);
  register_bench_command(app, action);
  register_generate_command(app, action);
  register_eval_command(app, action);
  register_bench_decode_command(app, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    log_setup(log_level_parse(log_level), log_file);
    thread_count_set(threads);
    if (action) action();
    log_flush();
    return 0;
  } catch (const Error& e) {
    log_error("rfa", "{}", e.what());
    log_flush();
    return 1;
  } catch (const std::exception& e) {
    log_error("rfa", "unexpected failure: {}", e.what());
    log_flush();
    return 2;
  }
}
