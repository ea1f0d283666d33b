// rfa: train and run RFA language models on the CPU.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>

#include "cli/cli_checks.h"
#include "cli/commands.h"
#include "core/cpu_cores.h"
#include "core/error.h"
#include "core/log.h"
#include "core/parallel.h"
#include "dist/dist.h"
#include "kernels/cpu_target.h"

namespace {

// CLI11 says only "A subcommand is required" when the word typed is not a
// command ("rfa frobnicate"): name the word and list the commands there are.
// CLI11 answers --help (and --version) before it looks at the rest of the line, so
// `rfa plot --help` printed the main help and exited 0, and a script probing for a command
// with --help believed it existed: a word it could not place is refused the same way with
// or without them.
int parse_error_exit(CLI::App& app, const CLI::ParseError& e) {
  CLI::App* level = &app;  // the deepest command chosen so far
  std::string path = "rfa";
  for (std::vector<CLI::App*> chosen = app.get_subcommands(); !chosen.empty(); chosen = level->get_subcommands()) {
    level = chosen.front();
    path += " " + level->get_name();
  }
  const bool needs_command = level->get_subcommands().empty() && level->get_require_subcommand_min() > 0;
  std::string word;
  for (const std::string& arg : level->remaining())
    if (!arg.starts_with("-")) {
      word = arg;
      break;
    }
  const bool answer = dynamic_cast<const CLI::CallForHelp*>(&e) || dynamic_cast<const CLI::CallForAllHelp*>(&e) ||
                      dynamic_cast<const CLI::CallForVersion*>(&e);
  if (answer) {
    const std::vector<std::string> unplaced = app.remaining(true);
    if (unplaced.empty()) return app.exit(e);
    if (!needs_command || word.empty()) return app.exit(CLI::ExtrasError(unplaced));
  } else if (!dynamic_cast<const CLI::RequiredError*>(&e) || !needs_command) {
    return app.exit(e);
  }
  std::string commands;
  for (const CLI::App* sub : level->get_subcommands(std::function<bool(CLI::App*)>{}))
    commands += (commands.empty() ? "" : ", ") + sub->get_name();
  if (word.empty())
    std::fprintf(stderr, "%s needs a command: %s\nRun '%s --help' for more information.\n", path.c_str(),
                 commands.c_str(), path.c_str());
  else
    std::fprintf(stderr, "'%s' is not a command of %s; the commands are: %s\nRun '%s --help' for more information.\n",
                 word.c_str(), path.c_str(), commands.c_str(), path.c_str());
  return static_cast<int>(CLI::ExitCodes::RequiredError);
}

// A log file goes where asked or nowhere: spdlog would quietly create missing
// directories, and a mistyped path would collect the log out of sight.
void log_file_check(const std::string& path) {
  if (path.empty()) return;
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!dir.empty() && !std::filesystem::is_directory(dir, ec))
    rfa::fail("--log-file '{}': directory '{}' does not exist; create it first or give a path in an existing directory",
         path, dir.string());
}

// Without --threads: the cores this process may use (core/cpu_cores.h: its affinity mask and CPU
// quota). Under mpirun the ranks on one machine share them: each takes its share of the machine's
// (at least 1), or fewer where the launcher bound it to fewer cores or a quota allows fewer.
int threads_default(int threads) {
  if (threads > 0) return threads;
  const rfa::CpuCores& cores = rfa::cpu_cores();
  const int local = rfa::dist_local_size();
  if (local == 1) return cores.usable;
  return std::max(1, std::min(cores.usable, (cores.bound() ? cores.machine : cores.usable) / local));
}

// More threads than CPUs to run them: OpenMP's barriers wait for threads the kernel has not
// scheduled (docs/cpu-targets.md, "Threads and the CPUs a process may use"). Said once, with the
// number that fits.
void threads_check(int threads) {
  const rfa::CpuCores& cores = rfa::cpu_cores();
  const int n = rfa::thread_count();
  // A default narrowed by those limits is said too: "1 threads" on a 64-core machine needs its reason.
  if (threads == 0 && rfa::dist_local_size() == 1 && cores.usable < cores.machine)
    rfa::log_info("rfa", "{} thread{}: this process may use {} of the machine's {} cores ({}); --threads sets another count",
                  n, n == 1 ? "" : "s", cores.usable, cores.machine,
                  cores.bound() && cores.quota_binds() ? "its CPU affinity and its cgroup's CPU quota"
                  : cores.bound()                      ? "its CPU affinity: taskset, a container or a job scheduler"
                                                       : "its cgroup's CPU quota");
  if (!cores.oversubscribed(n)) return;
  const int fit = cores.runnable();
  rfa::log_warn("rfa", "{} {} threads, but this process may run on {} CPU{} ({}): threads beyond that wait on each "
                "other and slow it down; use --threads {}{}",
                threads > 0 ? "--threads asks for" : "running", n, fit, fit == 1 ? "" : "s",
                cores.quota_binds() ? "its cgroup's CPU quota" : "its CPU affinity: taskset, a container or a job scheduler",
                fit, threads > 0 ? " (or leave --threads out)" : "");
}

// Output that could not be written (`> file` on a full disk) is an error: the text streamed
// to stdout is the result of generate, eval --json and --dump-config, and exit 0 said it was whole.
void stdout_finish() {
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  if (flushed && !std::ferror(stdout)) return;
  const int err = errno;
  rfa::fail("cannot write the output to stdout: {}; it is incomplete (free space where it goes, or redirect it "
            "elsewhere)",
            err != 0 ? std::strerror(err) : "an earlier write failed");
}

// "rfa bench decode": the command the words on the command line chose.
std::string chosen_command(CLI::App& app) {
  std::string path = "rfa";
  for (std::vector<CLI::App*> chosen = app.get_subcommands(); !chosen.empty();
       chosen = chosen.front()->get_subcommands())
    path += " " + chosen.front()->get_name();
  return path;
}

// Only training is data parallel (docs/distributed.md). Under mpirun -np N any other command
// would run N times over: N copies of its output interleaved on one terminal, N writers of the
// same files (--save-state, the token file).
void single_process_check(const std::string& command) {
  if (rfa::dist_size() == 1 || command == "rfa train" || command == "rfa bench train") return;
  rfa::fail("'{}' runs in one process, but mpirun started {} ranks, each of which would run it in full; run it "
            "without mpirun (only `rfa train` and `rfa bench train` are data parallel)",
            command, rfa::dist_size());
}

// An error on one rank leaves the others waiting in their next collective: end them all.
int exit_code(int code) {
  if (rfa::dist_size() > 1) rfa::dist_abort(code);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace rfa;
  // MPI only under an MPI launcher (dist/dist.h); without one, one rank and no MPI.
  DistScope dist(&argc, &argv);
  CLI::App app{"rfa: train, evaluate and sample Random Feature Attention language models on the CPU"};
  app.set_version_flag("--version", std::string("rfa ") + RFA_VERSION + ", kernels for " + cpu_target_name() + " (" +
                                        cpu_target_vectors() + ")");
  app.require_subcommand(1);

  int threads = 0;
  std::string log_level = "info";
  std::string log_file;
  app.add_option("--threads", threads, "Worker threads (default: the physical cores this process may use)")
      ->check(cli_integer_in(0, 1024));
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
  register_bench_serve_command(app, action);
  register_serve_command(app, action);
  register_chat_command(app, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return parse_error_exit(app, e);
  }
  try {
    log_file_check(log_file);
    // Rank 0 speaks for the run; the other ranks report only their errors.
    log_setup(dist_is_root() ? log_level_parse(log_level) : LogLevel::error, dist_is_root() ? log_file : "");
    cpu_target_apply();  // before any kernel: refuses a CPU without the build's instructions
    thread_count_set(threads_default(threads));
    parallel_fork_calibrate();
    threads_check(threads);
    if (parallel_fork_factor() > 1.0)  // OMP_WAIT_POLICY=passive, or a platform where waking a thread is slow
      log_debug("threads", "a fork and join of the {} threads costs {:.1f} µs, {:.1f}x what spinning threads take: "
                "decode products below {} multiply-adds run on one thread", thread_count(),
                parallel_fork_seconds() * 1e6, parallel_fork_factor(), parallel_min_work());
    single_process_check(chosen_command(app));
    if (action) action();
    stdout_finish();
    log_flush();
    return 0;
  } catch (const Error& e) {
    log_error("rfa", "{}{}", dist_size() > 1 ? fmt::format("rank {}: ", dist_rank()) : "", e.what());
    log_flush();
    return exit_code(1);
  } catch (const std::exception& e) {
    log_error("rfa", "{}unexpected failure: {}", dist_size() > 1 ? fmt::format("rank {}: ", dist_rank()) : "",
              e.what());
    log_flush();
    return exit_code(2);
  }
}
