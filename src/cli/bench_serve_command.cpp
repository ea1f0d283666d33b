// rfa bench serve --url http://HOST:PORT [--streams 1,8,64] [--tokens 256]: aggregate tokens/s,
// time between tokens and time to first token of S concurrent streamed completions against a
// running `rfa serve` (or any OpenAI-compatible server), with the client's own CPU time, so
// that what the client costs the shared cores is on the record (docs/serving.md, "Measured").
#include <memory>
#include <string>
#include <vector>

#include "cli/cli_checks.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/log.h"
#include "io/json.h"
#include "serve/load_client.h"

namespace rfa {
namespace {

struct BenchServeArgs {
  std::string url;
  std::string api_key;
  std::vector<int> streams{1, 8, 64};
  int tokens = 256;
  int prompt_letters = 16;
  int repeats = 1;
  uint64_t prompt_seed = 1;
  double timeout_s = 600;
  double temperature = 0;
};

std::string load_json(const LoadResult& r, const BenchServeArgs& a) {
  return fmt::format(
      "{{\"bench\": \"serve\", \"client\": \"rfa bench serve\", \"streams\": {}, \"tokens_per_stream\": {}, "
      "\"prompt_letters\": {}, \"temperature\": {}, \"generated\": {}, \"seconds\": {}, \"tokens_per_s\": {}, "
      "\"gap_ms_p50\": {}, \"gap_ms_p95\": {}, \"gap_ms_p99\": {}, \"gap_ms_max\": {}, \"ttft_ms_median\": {}, "
      "\"client_cpu_s\": {}, \"prompt_tokens\": {}, \"cached_tokens\": {}, \"failed\": {}}}",
      r.streams, a.tokens, a.prompt_letters, json_number(a.temperature), r.generated, json_number(r.seconds),
      json_number(r.tokens_per_s), json_number(r.gap_ms_p50), json_number(r.gap_ms_p95), json_number(r.gap_ms_p99),
      json_number(r.gap_ms_max), json_number(r.ttft_ms_median),
      json_number(r.client_cpu_s), r.prompt_tokens, r.cached_tokens, r.failed);
}

void run_bench_serve(const BenchServeArgs& a) {
  LoadTarget target = load_target_parse(a.url);
  target.api_key = a.api_key;
  LoadOptions warm;  // the server's first request pays for what is set up lazily
  warm.streams = 1;
  warm.max_tokens = 4;
  warm.prompt_letters = a.prompt_letters;
  warm.prompt_seed = a.prompt_seed + (uint64_t(1) << 40);  // a prompt no run uses
  warm.timeout_s = a.timeout_s;
  const LoadResult w = load_run(target, warm);
  if (w.failed)
    fail("bench serve: the warm-up request to {} failed: {}; is `rfa serve` running there (and --api-key right)?",
         a.url, w.first_error);
  std::printf("%8s | %8s | %10s | %9s | %12s | %10s | %10s | %10s | %10s | %10s | %10s | %8s\n", "streams", "repeat",
              "generated", "seconds", "tokens/s", "gap p50", "gap p95", "gap p99", "gap max", "first tok", "client CPU",
              "cached");
  std::vector<std::string> lines;
  uint64_t seed = a.prompt_seed;  // every stream of every run its own prompt: none is in the server's cache
  for (int s : a.streams) {
    for (int rep = 0; rep < a.repeats; ++rep) {
      LoadOptions o;
      o.streams = s;
      o.max_tokens = a.tokens;
      o.prompt_letters = a.prompt_letters;
      o.prompt_seed = seed;
      seed += static_cast<uint64_t>(s);
      o.timeout_s = a.timeout_s;
      o.temperature = a.temperature;
      const LoadResult r = load_run(target, o);
      if (r.failed)
        fail("bench serve: {} of {} streams failed; the first: {}. With many streams, start the server with "
             "--parallel and --queue at least the stream count",
             r.failed, s, r.first_error);
      std::printf("%8d | %8d | %10lld | %9.3f | %12.0f | %7.2f ms | %7.2f ms | %7.2f ms | %7.2f ms | %7.1f ms | "
                  "%8.3f s | %8lld\n",
                  s, rep + 1, static_cast<long long>(r.generated), r.seconds, r.tokens_per_s, r.gap_ms_p50,
                  r.gap_ms_p95, r.gap_ms_p99, r.gap_ms_max, r.ttft_ms_median, r.client_cpu_s,
                  static_cast<long long>(r.cached_tokens));
      std::fflush(stdout);
      lines.push_back(load_json(r, a));
    }
  }
  for (const std::string& line : lines) std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

}  // namespace

void register_bench_serve_command(CLI::App& app, CommandAction& action) {
  auto args = std::make_shared<BenchServeArgs>();
  CLI::App* group = subcommand_group(app, "bench", "Benchmarks (not tests)");
  CLI::App* cmd = group->add_subcommand(
      "serve", "Load a running server: S concurrent streamed completions, aggregate tokens/s, time between tokens, "
               "time to first token (docs/serving.md)");
  cmd->add_option("--url", args->url, "The server, http://HOST:PORT (e.g. what `rfa serve` logs it listens on)")
      ->required();
  cmd->add_option("--api-key", args->api_key, "Bearer key, when the server was started with one (or RFA_API_KEY)")
      ->envname("RFA_API_KEY");
  cmd->add_option("--streams", args->streams, "Concurrent streams, one run each")
      ->delimiter(',')
      ->capture_default_str()
      ->check(cli_integer<int>(1, 4096));
  cmd->add_option("--tokens", args->tokens, "max_tokens of every request (greedy: each decodes them all unless EOS)")
      ->capture_default_str()
      ->check(cli_integer<int>(1, 1 << 20));
  cmd->add_option("--prompt-letters", args->prompt_letters, "Letters of each stream's prompt (its own text)")
      ->capture_default_str()
      ->check(cli_integer<int>(1, 1 << 20));
  cmd->add_option("--prompt-seed", args->prompt_seed,
                  "Seed of the first stream's prompt; every stream of the invocation gets the next one, so no prompt "
                  "repeats (a server that cached an earlier run's prompts would skip their prefill)")
      ->capture_default_str();
  cmd->add_option("--temperature", args->temperature,
                  "Sampling temperature of every request (0 = greedy); above 0 with the OpenAI API's defaults "
                  "top_k 0 and top_p 1, and a seed per stream, so a stream may end early at EOS")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 2.0));
  cmd->add_option("--repeats", args->repeats, "Runs of each stream count")
      ->capture_default_str()
      ->check(cli_integer<int>(1, 1000));
  cmd->add_option("--timeout", args->timeout_s, "Seconds a run may take before its streams count as failed")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 86400.0));
  cmd->callback([args, &action] { action = [args] { run_bench_serve(*args); }; });
}

}  // namespace rfa
