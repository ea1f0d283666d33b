// rfa generate RUN_OR_CHECKPOINT --prompt TEXT | --prompt-file FILE [-n N] [--temperature T]
//   [--top-k K] [--top-p P] [--seed S] [--greedy] [--num-samples N] [--window W] [--save-state F] [--load-state F]
//   [--ignore-eos] [--instruction TEXT [--input TEXT] [--template T]]
// Tokens stream to stdout as they are produced; a sample ends after -n tokens or at the
// tokenizer's end-of-sequence token (unless --ignore-eos); statistics go to stderr at the end.
#include <algorithm>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "io/file_io.h"
#include "cli/cli_checks.h"
#include "attention/attention_core.h"
#include "cli/commands.h"
#include "config/config_enums.h"
#include "core/error.h"
#include "core/log.h"
#include "core/memory_check.h"
#include "core/parallel.h"
#include "decode/decode_memory.h"
#include "decode/decode_window_policy.h"
#include "decode/decoder_state_io.h"
#include "data/prompt_template.h"
#include "decode/generate.h"
#include "model/model_load.h"

namespace rfa {
namespace {

struct GenerateArgs {
  std::string model;
  std::string prompt;
  std::string prompt_file;
  int64_t max_new_tokens = 256;
  SamplerConfig sampler;
  int num_samples = 1;
  int prefill_segment = 512;
  int window = -1;  // softmax attention window; -1 = the model's context length, 0 = unlimited
  std::string save_state;
  std::string load_state;
  Precision precision = Precision::fp32;
  bool ignore_eos = false;  // generate -n tokens even past an end-of-sequence token
  std::string instruction;  // rendered with the run's template into the prompt (docs/fine-tuning.md)
  std::string input;
  std::string prompt_template;  // --template; "" = the run's data.template
};

// The prompt --instruction and --input stand for: the template of the run's instruction data
// (alpaca: data.template, or --template; prompt_completion: the instruction verbatim, its
// prompt); for a model not tuned on instructions, --template (default alpaca), with a note.
std::string instruction_prompt(const GenerateArgs& a, const Config& config) {
  if (!a.prompt.empty() || !a.prompt_file.empty())
    fail("--instruction renders the prompt from the run's template; drop --prompt / --prompt-file");
  if (a.instruction.empty()) fail("--input {} needs --instruction: the input completes an instruction", a.input);
  const DataFormat format = config.data.format;
  if (format == DataFormat::prompt_completion) {
    if (!a.input.empty() || !a.prompt_template.empty())
      fail("this run was tuned on prompt_completion data, whose prompt is used as written: put everything in "
           "--instruction (no --input, no --template)");
    return a.instruction;
  }
  PromptTemplate t = format == DataFormat::alpaca ? config.data.prompt_template : PromptTemplate::alpaca;
  if (!a.prompt_template.empty() && !enum_parse(a.prompt_template, &t))
    fail("--template {} is not one of {}", a.prompt_template, enum_choices(PromptTemplate{}));
  if (format == DataFormat::preference)
    log_info("generate", "a preference run's prompts are its data's own; rendering the {} template", enum_name(t));
  else if (format != DataFormat::alpaca)
    log_info("generate", "the model was trained on data.format {}, not instruction examples; rendering the {} "
             "template anyway", enum_name(format), enum_name(t));
  return prompt_render(t, a.instruction, a.input);
}

std::string bytes_human(int64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (bytes < 1024 * 1024) return fmt::format("{:.1f} KiB", bytes / 1024.0);
  return fmt::format("{:.2f} MiB", bytes / (1024.0 * 1024.0));
}

void run_generate(const GenerateArgs& a) {
  if (a.num_samples < 1) fail("--num-samples {} must be at least 1", a.num_samples);
  if (a.max_new_tokens < 0) fail("-n {} must be >= 0", a.max_new_tokens);
  if ((!a.save_state.empty() || !a.load_state.empty()) && a.num_samples != 1)
    fail("--save-state/--load-state continue one text; use --num-samples 1 (got {})", a.num_samples);
  LoadedModel loaded = model_load(a.model, a.precision);
  Model<float>& model = *loaded.model;
  const Tokenizer& tok = *loaded.tokenizer;
  const bool instructed = !a.instruction.empty() || !a.input.empty();
  const std::string text = instructed               ? instruction_prompt(a, loaded.config)
                           : a.prompt_file.empty() ? a.prompt
                                                   : file_read_user_text(a.prompt_file, "--prompt-file");
  const std::vector<int32_t> prompt = tok.encode(text);
  if (prompt.empty() && a.load_state.empty())
    fail("the prompt is empty; give --prompt TEXT or --prompt-file FILE (the model has no start token)");

  // The samples are the rows of one decoder, decoded in one batched step; sample i draws with
  // seed --seed + i, so it is the text `rfa generate --seed (seed + i)` alone gives.
  const int K = a.num_samples;
  DecoderOptions o;
  o.batch = K;
  o.prefill_rows = 1;  // the prompt is prefilled once, into row 0, and copied to the others
  o.precision = a.precision;
  o.max_segment = a.prefill_segment;
  // The RoPE table and softmax's cache: a continued generation starts where its state left off.
  const int64_t start = a.load_state.empty() ? 0 : decoder_state_position(a.load_state);
  // Saturating: -n up to 2^63-1 is allowed ("until stopped"), and the sum overflowed into a negative count.
  const int64_t used = start + static_cast<int64_t>(prompt.size());
  o.max_positions = a.max_new_tokens > std::numeric_limits<int64_t>::max() - used
                        ? std::numeric_limits<int64_t>::max()
                        : used + a.max_new_tokens;
  const bool grows = model.spec.attn_state_grows();
  // Softmax: the window (default the training context) and the warnings past it (decode_window_policy.h).
  int trained_window = 0;  // layers trained with attention.window decode over it, whatever --window says
  for (const AttentionSpec& l : model.spec.attn) trained_window = std::max(trained_window, l.window);
  const DecodeWindowPolicy windowing = decode_window_policy(
      {.window = a.window, .state_grows = grows, .trained_window = trained_window,
       .context = model.spec.model.context_length,
       .max_positions = o.max_positions, .attention_text = model_spec_attention_text(model.spec)});
  o.window = windowing.window;
  for (const std::string& w : windowing.warnings) log_warn("generate", "{}", w);
  if (!windowing.note.empty()) log_info("generate", "{}", windowing.note);
  std::string positions_keys = fmt::format("-n ({}) or the prompt ({} tokens)", a.max_new_tokens, prompt.size());
  if (grows)
    positions_keys += o.window > 0 ? fmt::format(", or --window ({})", o.window) : ", or set --window (0 = unlimited)";
  if (K > 1) positions_keys += fmt::format(", or --num-samples ({})", K);
  o.release_model_matrices = true;  // the decoder is the model's last reader
  memory_require(memory_estimate_decoder(model.spec, o, thread_count(), fmt::format("--prefill-segment ({})", o.max_segment),
                                         positions_keys),
                 "decoding");
  // A saved state is keyed by the weights' checksum: taken before the decoder releases the matrices.
  const std::string checksum = (a.save_state.empty() && a.load_state.empty()) ? "" : model_checksum(model);
  Decoder<float> dec(model, o);
  std::vector<Sampler> samplers;
  samplers.reserve(static_cast<size_t>(K));
  for (int i = 0; i < K; ++i) {
    SamplerConfig sc = a.sampler;
    sc.seed = a.sampler.seed + static_cast<uint64_t>(i);  // (mod 2^64)
    samplers.emplace_back(model.spec.V, sc);
  }
  if (!a.load_state.empty()) {
    decoder_state_load(a.load_state, dec, checksum);
    log_info("generate", "continuing from {} at position {}", a.load_state, dec.position());
  }
  const int32_t stop = a.ignore_eos ? -1 : tok.eos_id();
  // Sample 0 streams as it is produced; the others are printed after it, each after a dashed line.
  if (!instructed) std::fwrite(text.data(), 1, text.size(), stdout);  // an instruction's response alone
  std::fflush(stdout);
  std::vector<std::string> later(static_cast<size_t>(K));
  const GenerateStats total = generate(dec, samplers, prompt, a.max_new_tokens, [&](int row, int32_t id) {
    const std::string piece = tok.decode_token(id);  // short: no heap allocation (SSO)
    if (row > 0) {
      later[static_cast<size_t>(row)] += piece;
      return;
    }
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
  }, stop);
  const int stopped = total.stopped;
  for (int i = 1; i < K; ++i) {
    std::fputs("\n---------------\n", stdout);
    if (!instructed) std::fwrite(text.data(), 1, text.size(), stdout);
    std::fwrite(later[size_t(i)].data(), 1, later[size_t(i)].size(), stdout);
  }
  std::fputs("\n", stdout);
  std::fflush(stdout);
  if (!a.save_state.empty()) {
    decoder_state_save(a.save_state, dec, checksum);
    log_info("generate", "state at position {} saved to {} ({}); continue with --load-state", dec.position(),
             a.save_state, bytes_human(dec.state_bytes()));
  }

  const std::string kind = model_spec_attention_text(model.spec);
  log_info("generate", "prompt: {} tokens, prefill {:.0f} tokens/s ({:.1f} ms)", total.prompt_tokens,
           total.prompt_tokens / std::max(total.prefill_seconds, 1e-9), total.prefill_seconds * 1e3);
  log_info("generate", "generated: {} tokens in {} sample(s) decoded together, {:.0f} tokens/s, {:.3f} ms/token", total.generated,
           a.num_samples, total.generated / std::max(total.decode_seconds, 1e-9),
           total.decode_seconds * 1e3 / std::max<int64_t>(total.generated, 1));
  if (stop >= 0)
    log_info("generate", "{} of {} sample(s) stopped at the end-of-sequence token (id {}) before -n {}{}", stopped,
             a.num_samples, stop, a.max_new_tokens, stopped > 0 ? "; --ignore-eos generates past it" : "");
  if (!grows)
    log_info("generate", "state: {} ({} {}, fixed size whatever the length)", bytes_human(total.state_bytes), kind,
             trained_window > 0 ? "state (windowed softmax layers: a ring of their trained window)"
                                : "recurrent state");
  else if (o.window > 0)
    log_info("generate", "state: {} ({} KV cache at position {}; a window of the last {} positions, fixed size)",
             bytes_human(total.state_bytes), kind, dec.position(), o.window);
  else
    log_info("generate", "state: {} ({} KV cache at position {}; grows with the text)", bytes_human(total.state_bytes),
             kind, dec.position());
}

}  // namespace

void register_generate_command(CLI::App& app, CommandAction& action) {
  auto args = std::make_shared<GenerateArgs>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate text from a trained model (streams to stdout)");
  cmd->add_option("model", args->model, "Run directory or checkpoint directory")->required();
  auto* prompt = cmd->add_option("-p,--prompt", args->prompt, "Prompt text");
  auto* file = cmd->add_option("-f,--prompt-file", args->prompt_file, "Read the prompt from this file (or a pipe: -f /dev/stdin)");
  prompt->excludes(file);
  cmd->add_option("-n,--n-predict,--max-new-tokens", args->max_new_tokens, "Tokens to generate")
      ->capture_default_str()
      ->check(cli_integer<int64_t>(0));
  cmd->add_option("--temp,--temperature", args->sampler.temperature, "Sampling temperature (0 = greedy)")
      ->capture_default_str();
  cmd->add_option("--top-k", args->sampler.top_k, "Keep the K most likely tokens (0 = all)")
      ->capture_default_str()
      ->check(cli_integer<int>(0));
  cmd->add_option("--top-p", args->sampler.top_p, "Nucleus: keep the smallest set with probability >= P (1 = all)")
      ->capture_default_str();
  args->sampler.seed = 1337;
  cmd->add_option("-s,--seed", args->sampler.seed, "Random seed (same seed, same text)")
      ->capture_default_str()
      ->check(cli_integer<uint64_t>(0));
  cmd->add_flag("--greedy", args->sampler.greedy, "Always take the most likely token");
  cmd->add_option("--num-samples", args->num_samples,
                  "Independent samples of the same prompt, decoded together in one batched step; sample i draws "
                  "with --seed + i (the text a run with that seed alone gives)")
      ->capture_default_str()
      ->check(cli_integer<int>(1));
  cmd->add_option("--prefill-segment", args->prefill_segment, "Prompt tokens per parallel prefill call")
      ->capture_default_str()
      ->check(cli_integer<int>(1));
  cmd->add_option("--window", args->window,
                  "Softmax: attend over the last N positions (a ring KV cache of N slots); 0 = the whole text "
                  "(quality degrades past the training context). Default: the model's context length. "
                  "RFA kinds ignore it (fixed-size state)")
      ->check(cli_integer<int>(0));
  cmd->add_option("--save-state", args->save_state, "After generating, save the RFA state to this file");
  cmd->add_option("--load-state", args->load_state, "Continue from a state saved with --save-state");
  auto* instruction = cmd->add_option(
      "--instruction", args->instruction,
      "Instruction for a model tuned on instruction data: rendered with the run's template (alpaca: data.template; "
      "prompt_completion: as written) into the prompt; only the response is printed");
  instruction->excludes(prompt)->excludes(file);
  cmd->add_option("--input", args->input, "The instruction's input (alpaca template), if any")->needs(instruction);
  cmd->add_option("--template", args->prompt_template,
                  "With --instruction: alpaca|alpaca_short instead of the run's data.template")
      ->needs(instruction);
  cmd->add_flag("--ignore-eos", args->ignore_eos,
                "Generate all -n tokens: do not stop at the end-of-sequence token (a sampled one prints nothing)");
  cli_add_precision(*cmd, args->precision);
  cmd->callback([args, &action] { action = [args] { run_generate(*args); }; });
}

}  // namespace rfa
