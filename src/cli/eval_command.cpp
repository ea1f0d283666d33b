// rfa eval perplexity RUN_OR_CHECKPOINT [--data FILE | --split val|train] [--max-tokens N] [--json]
//   [--stride S] [--window W] [--segment N] [--tokens FILE]
// Mean NLL per token, perplexity and bits per byte of the original text.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "io/file_io.h"
#include "io/json.h"
#include "cli/cli_checks.h"
#include "cli/commands.h"
#include "config/config_enums.h"
#include "core/error.h"
#include "core/log.h"
#include "data/token_file.h"
#include "data/token_file_format.h"
#include "eval/perplexity.h"
#include "model/model_load.h"
#include "tokenizer/text_check.h"

namespace rfa {
namespace {

struct EvalArgs {
  std::string model;
  std::string data;
  std::string split = "val";
  std::string tokens_path;  // "" = the config's data.tokens
  int64_t max_tokens = 0;
  bool json = false;
  PerplexityOptions options;
};

// The evaluated tokens and the bytes of text they stand for.
struct EvalText {
  std::vector<int32_t> tokens;
  int64_t bytes = 0;
  std::string source;
};

int64_t bytes_of(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  int64_t n = 0;
  for (int32_t id : ids) n += tok.token_bytes(id);
  return n;
}

EvalText text_load(const EvalArgs& a, const LoadedModel& m) {
  EvalText t;
  const Tokenizer& tok = *m.tokenizer;
  if (!a.data.empty()) {
    const std::string text = file_read_user_text(a.data, "--data");
    // SentencePiece would encode any bytes (invalid UTF-8 as byte tokens) and give a perplexity of noise.
    if (text.starts_with(std::string_view(kTokenFileMagic, sizeof kTokenFileMagic)))
      fail("--data {} is a token file, not text; evaluate it with --tokens {} --split val (or train)", a.data,
           a.data);
    if (text.empty()) fail("--data {} is empty; give a UTF-8 text file", a.data);
    text_check(text, a.data, "--data file");
    t.tokens = tok.encode(text);
    t.bytes = static_cast<int64_t>(text.size());
    t.source = a.data;
  } else {
    if (a.split != "val" && a.split != "train") fail("--split {} is not one of val|train", a.split);
    const std::string path = a.tokens_path.empty() ? config_tokens_path(m.config.data) : a.tokens_path;
    if (!std::filesystem::exists(path))
      fail("token file '{}' (data.tokens of the checkpoint's config) does not exist here; run from the training "
           "directory, pass --tokens FILE, or evaluate a text with --data FILE",
           path);
    TokenFile file = TokenFile::open(path, tok);  // checks it was made by this tokenizer
    TokenSplit split = a.split == "val" ? file.val() : file.train();
    t.tokens = split.to_vector();
    t.bytes = split.bytes();
    t.source = fmt::format("{} ({} split)", path, a.split);
  }
  if (a.max_tokens > 0 && static_cast<int64_t>(t.tokens.size()) > a.max_tokens) {
    t.tokens.resize(static_cast<size_t>(a.max_tokens));
    t.bytes = bytes_of(tok, t.tokens);
    t.source += fmt::format(", first {} tokens", a.max_tokens);
  }
  return t;
}

void run_eval(const EvalArgs& a) {
  if (a.max_tokens < 0) fail("--max-tokens {} must be >= 0 (0 = all)", a.max_tokens);
  LoadedModel m = model_load(a.model, a.options.precision);
  EvalText text = text_load(a, m);
  log_info("eval", "{}: {} tokens, {} bytes", text.source, text.tokens.size(), text.bytes);
  PerplexityResult r = perplexity_evaluate(*m.model, text.tokens, text.bytes, a.options);
  const std::string kind = model_spec_attention_text(m.model->spec);
  if (a.json) {
    std::string out = "{";
    auto add = [&](const char* key, const std::string& value) {
      if (out.size() > 1) out += ", ";
      out += json_quote(key) + ": " + value;
    };
    add("checkpoint", json_quote(m.checkpoint_dir));
    add("step", std::to_string(m.step));
    add("attention", json_quote(kind));
    add("source", json_quote(text.source));
    add("method", json_quote(r.method));
    if (r.window > 0) {
      add("window", std::to_string(r.window));
      add("stride", std::to_string(r.stride));
    }
    add("tokens", std::to_string(r.tokens));
    add("bytes", std::to_string(r.bytes));
    add("mean_nll", json_number(r.mean_nll));
    add("perplexity", json_number(r.perplexity));
    add("bits_per_byte", json_number(r.bits_per_byte));
    add("seconds", json_number(r.seconds));
    std::printf("%s}\n", out.c_str());
  } else {
    std::printf("checkpoint     %s (step %lld, %s)\n", m.checkpoint_dir.c_str(), static_cast<long long>(m.step), kind.c_str());
    std::printf("text           %s\n", text.source.c_str());
    std::printf("method         %s\n", r.method.c_str());
    std::printf("tokens         %lld predicted, %lld bytes\n", static_cast<long long>(r.tokens),
                static_cast<long long>(r.bytes));
    std::printf("mean NLL       %.5f nats/token\n", r.mean_nll);
    std::printf("perplexity     %.4f\n", r.perplexity);
    std::printf("bits per byte  %.5f\n", r.bits_per_byte);
    std::printf("time           %.1f s (%.0f tokens/s)\n", r.seconds, r.tokens / std::max(r.seconds, 1e-9));
  }
  std::fflush(stdout);
}

}  // namespace

void register_eval_command(CLI::App& app, CommandAction& action) {
  auto args = std::make_shared<EvalArgs>();
  CLI::App* group = subcommand_group(app, "eval", "Evaluate a trained model");
  CLI::App* cmd = group->add_subcommand("perplexity", "Mean NLL, perplexity and bits per byte on a text");
  cmd->add_option("model", args->model, "Run directory or checkpoint directory")->required();
  auto* data = cmd->add_option("--data", args->data, "A UTF-8 text file to evaluate");
  auto* split = cmd->add_option("--split", args->split, "Split of the run's token file: val or train")
                    ->capture_default_str();
  data->excludes(split);
  cmd->add_option("--tokens", args->tokens_path, "Token file for --split (default: the config's data.tokens)");
  cmd->add_option("--max-tokens", args->max_tokens, "Evaluate only the first N tokens (0 = all)")
      ->capture_default_str()
      ->check(cli_integer<int64_t>(0));
  cmd->add_flag("--json", args->json, "Print one JSON object instead of a table");
  cmd->add_option("--stride", args->options.stride, "Sliding-window advance (0 = window / 2)")
      ->capture_default_str()
      ->check(cli_integer<int>(0));
  cmd->add_option("--window", args->options.window,
                  "Sliding windows of N tokens, for RFA kinds too (0 = softmax: the training context; RFA "
                  "kinds: one pass unless --sliding)")
      ->capture_default_str()
      ->check(cli_integer<int>(0));
  cmd->add_flag("--sliding", args->options.sliding,
                "RFA too: sliding windows of the training context instead of one pass (compare with softmax)");
  cmd->add_option("--segment", args->options.segment, "RFA: tokens per prefill segment (state carried across)")
      ->capture_default_str()
      ->check(cli_integer<int>(1));
  cli_add_precision(*cmd, args->options.precision);
  cmd->callback([args, &action] { action = [args] { run_eval(*args); }; });
}

}  // namespace rfa
