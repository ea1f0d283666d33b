#include "cli/serve_options.h"

#include "cli/cli_checks.h"

namespace rfa {

void serve_options_add(CLI::App& cmd, ServeSetupOptions& o, bool server) {
  cmd.add_option("model", o.run, "Run directory or checkpoint directory")->required();
  if (server) {
    cmd.add_option("--parallel", o.parallel, "Sequences decoded at once (slots)")
        ->capture_default_str()
        ->check(cli_integer_in(1, 1024));
    cmd.add_option("--queue", o.queue, "Requests that may wait for a slot; more get 503 with Retry-After")
        ->capture_default_str()
        ->check(cli_integer_in(0, 65536));
  }
  cmd.add_option("--cache-mib", o.cache_mib, "Bound of the state cache in MiB (0 = no cache)")
      ->capture_default_str()
      ->check(cli_integer_in(server ? 0 : 1, 1 << 20));
  cmd.add_option("--prefill-chunk", o.prefill_chunk, "Most prompt tokens per prefill call (interleaved with decoding)")
      ->capture_default_str()
      ->check(cli_integer_in(1, 65536));
  if (server)
    cmd.add_option("--stream-batch", o.stream_batch,
                   "Tokens a stream's reader is woken for: 0 = auto (as many as keep all the readers to about 2,000 "
                   "wakes a second, at most 50 ms of steps), N = every N; more tokens a write costs fewer system "
                   "calls under load, at N steps between writes")
        ->capture_default_str()
        ->check(cli_integer_in(0, kStreamBatchMost));
  cmd.add_option("--ctx-size", o.ctx_size,
                 "Positions a conversation may reach (default: softmax its training context, RoPE 8192, otherwise "
                 "no limit)")
      ->check(cli_integer_in(1, int64_t{1} << 40));
  cmd.add_option("--max-prompt-tokens", o.max_prompt_tokens, "Most tokens a prompt may have")
      ->capture_default_str()
      ->check(cli_integer_in(1, int64_t{1} << 30));
  cmd.add_option("--state-dir", o.state_dir, "Directory of named state files (save and load)");
  cmd.add_option("--chat-template", o.chat_template, "Chat template (default: the run's; plain)");
  cli_add_precision(cmd, o.precision);
}

}  // namespace rfa
