// rfa eval perplexity RUN_OR_CHECKPOINT [--data FILE | --split val|train] [--max-tokens N] [--json]
//   [--stride S] [--window W] [--segment N] [--tokens FILE] [--format F]
// Mean NLL per token, perplexity and bits per byte of the original text. Data of a JSON Lines
// format (the run's data.format, or --format): jsonl documents joined by EOS as one text (EOS
// counted like any token); instruction examples (alpaca, prompt_completion) each scored alone,
// the mean NLL that of the response tokens, the prompt's beside it (eval/example_nll.h).
// rfa eval accuracy RUN_OR_CHECKPOINT [--split val|train] [--tokens FILE] [--json]
// Examples (mqar recall: the answers; instruction data: the response tokens): the share of
// targets that are the argmax of the logits, and the mean NLL over the same targets
// (docs/recall.md).
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "io/file_io.h"
#include "io/json.h"
#include "cli/cli_checks.h"
#include "cli/commands.h"
#include "config/config_enums.h"
#include "core/error.h"
#include "core/log.h"
#include "data/batch_sampler.h"
#include "data/token_file.h"
#include "data/data_setup.h"
#include "data/token_file_documents.h"
#include "data/token_file_format.h"
#include "eval/example_nll.h"
#include "train/dpo.h"
#include "eval/perplexity.h"
#include "model/model_load.h"
#include "core/timer.h"
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
  std::string format;  // "" = the run's data.format
  PerplexityOptions options;
};

// The evaluated tokens and the bytes of text they stand for; or, for instruction data, the
// examples (over the token file that holds them).
struct EvalText {
  std::vector<int32_t> tokens;
  int64_t bytes = 0;
  std::string source;
  std::optional<TokenFile> file;
  std::optional<ExampleSet> examples;
  std::vector<int64_t> starts;  // data.document_boundaries reset: where documents begin in tokens
};

DataFormat format_of(const EvalArgs& a, const LoadedModel& m) {
  if (a.format.empty()) return m.config.data.format;
  DataFormat f;
  if (!enum_parse(a.format, &f)) fail("--format {} is not one of {}", a.format, enum_choices(DataFormat{}));
  return f;
}

// A --data file of a JSON Lines format, encoded as `rfa data prepare` would (every document,
// no validation split) into a temporary token file, opened and unlinked at once.
TokenFile documents_encode(const std::string& path, DataFormat format, const LoadedModel& m) {
  const std::string temp = (std::filesystem::temp_directory_path() /
                            fmt::format("rfa-eval-{}-{}.tokens", ::getpid(), std::filesystem::path(path).filename().string()))
                               .string();
  token_file_prepare_documents(corpus_source(path, format, m.config.data.prompt_template), *m.tokenizer, temp, 0.0);
  TokenFile file = TokenFile::open(temp, *m.tokenizer);
  std::error_code ec;
  std::filesystem::remove(temp, ec);  // the mapping keeps it readable
  return file;
}

int64_t bytes_of(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  int64_t n = 0;
  for (int32_t id : ids) n += tok.token_bytes(id);
  return n;
}

EvalText text_load(const EvalArgs& a, const LoadedModel& m) {
  EvalText t;
  const Tokenizer& tok = *m.tokenizer;
  const DataFormat format = format_of(a, m);
  DataConfig data = m.config.data;
  data.format = format;
  if (!a.data.empty()) {
    const std::string text = file_read_user_text(a.data, "--data");
    // SentencePiece would encode any bytes (invalid UTF-8 as byte tokens) and give a perplexity of noise.
    if (text.starts_with(std::string_view(kTokenFileMagic, sizeof kTokenFileMagic)))
      fail("--data {} is a token file, not text; evaluate it with --tokens {} --split val (or train)", a.data,
           a.data);
    if (text.empty()) fail("--data {} is empty; give a UTF-8 text file", a.data);
    text_check(text, a.data, "--data file");
    t.source = a.data;
    if (format == DataFormat::text) {
      t.tokens = tok.encode(text);
      t.bytes = static_cast<int64_t>(text.size());
    } else {
      t.file.emplace(documents_encode(a.data, format, m));
      t.source += fmt::format(" ({}, {} documents)", enum_name(format), t.file->documents().size());
    }
  } else {
    if (a.split != "val" && a.split != "train") fail("--split {} is not one of val|train", a.split);
    const std::string path = a.tokens_path.empty() ? config_tokens_path(m.config.data) : a.tokens_path;
    if (!std::filesystem::exists(path))
      fail("token file '{}' (data.tokens of the checkpoint's config) does not exist here; run from the training "
           "directory, pass --tokens FILE, or evaluate a text with --data FILE",
           path);
    t.file.emplace(TokenFile::open(path, tok));  // checks it was made by this tokenizer
    token_file_format_require(*t.file, data);
    t.source = fmt::format("{} ({} split)", path, a.split);
  }
  if (t.file && (config_supervised(data) || config_preference(data))) {  // the examples of the split (or --data)
    const TokenFile& f = *t.file;
    const int64_t split = a.data.empty() ? f.header().split_document : f.documents().size();
    const bool val = a.data.empty() && a.split == "val";
    t.examples = ExampleSet{f.all(), f.documents(), val ? split : 0, val ? f.documents().size() - split : split};
    return t;
  }
  if (t.file) {
    const TokenSplit split = !a.data.empty() ? t.file->all() : a.split == "val" ? t.file->val() : t.file->train();
    t.tokens = split.to_vector();
    t.bytes = split.bytes();
    // As the run trained and validated: restarting at each document when its config says reset.
    const int64_t first = a.data.empty() && a.split == "val" ? t.file->header().split : 0;
    if (m.config.data.document_boundaries == DocumentBoundaries::reset && t.file->documents().size() > 0)
      t.starts = document_starts_in(t.file->documents(), first, static_cast<int64_t>(t.tokens.size()));
  }
  if (a.max_tokens > 0 && static_cast<int64_t>(t.tokens.size()) > a.max_tokens) {
    t.tokens.resize(static_cast<size_t>(a.max_tokens));
    t.bytes = bytes_of(tok, t.tokens);
    t.source += fmt::format(", first {} tokens", a.max_tokens);
    std::erase_if(t.starts, [&](int64_t s) { return s >= a.max_tokens; });
  }
  return t;
}

// Instruction examples: the response NLL as mean NLL, the prompt's beside it.
void report_examples(const EvalArgs& a, const LoadedModel& m, const EvalText& text) {
  if (a.max_tokens > 0) fail("--max-tokens {} applies to a text; instruction examples are scored whole", a.max_tokens);
  log_info("eval", "{}: {} examples, each scored alone (examples longer than model.context_length + 1 = {} tokens "
           "skipped, as in training)", text.source, text.examples->count, m.config.model.context_length + 1);
  Timer clock;
  const bool pairs = format_of(a, m) == DataFormat::preference;
  std::vector<double> logprobs;
  const ExampleNll r = examples_evaluate(*m.model, *text.examples, a.options.precision, pairs ? &logprobs : nullptr);
  // Preference pairs: the share the model prefers the chosen answer in, and the mean margin (the
  // DPO loss needs the run's reference model: the trainer logs it as val_loss).
  DpoScores s;
  if (pairs) s = dpo_scores(logprobs, std::vector<double>(logprobs.size(), 0.0), 1.0);
  if (r.examples == 0)
    fail("none of the {} examples of {} fits model.context_length + 1 = {} tokens; nothing was scored",
         text.examples->count, text.source, m.config.model.context_length + 1);
  const double seconds = clock.seconds();
  const char* kind = enum_name(m.model->spec.attention.kind);
  if (a.json) {
    std::printf("{\"checkpoint\": %s, \"step\": %lld, \"attention\": %s, \"source\": %s, \"method\": %s, "
                "\"examples\": %lld, \"skipped\": %lld, \"tokens\": %lld, \"prompt_tokens\": %lld, \"mean_nll\": %s, "
                "\"perplexity\": %s, \"accuracy\": %s, \"prompt_nll\": %s%s, \"seconds\": %s}\n",
                json_quote(m.checkpoint_dir).c_str(), static_cast<long long>(m.step), json_quote(kind).c_str(),
                json_quote(text.source).c_str(), json_quote("each example alone; response tokens").c_str(),
                static_cast<long long>(r.examples), static_cast<long long>(r.too_long),
                static_cast<long long>(r.response_tokens), static_cast<long long>(r.prompt_tokens),
                json_number(r.response_mean()).c_str(), json_number(std::exp(r.response_mean())).c_str(),
                json_number(r.response_accuracy()).c_str(), json_number(r.prompt_mean()).c_str(),
                pairs ? fmt::format(", \"pairs\": {}, \"pair_accuracy\": {}, \"margin\": {}", s.pairs,
                                    json_number(s.accuracy), json_number(s.margin)).c_str()
                      : "",
                json_number(seconds).c_str());
  } else {
    std::printf("checkpoint     %s (step %lld, %s)\n", m.checkpoint_dir.c_str(), static_cast<long long>(m.step), kind);
    std::printf("text           %s\n", text.source.c_str());
    std::printf("method         each example alone from an empty state; %lld scored, %lld too long skipped\n",
                static_cast<long long>(r.examples), static_cast<long long>(r.too_long));
    std::printf("response NLL   %.5f nats/token over %lld response tokens (%s)\n", r.response_mean(),
                static_cast<long long>(r.response_tokens),
                text.examples->docs.answers_only() ? "the answers" : "EOS included");
    std::printf("accuracy       %.2f%% (the target is the argmax)\n", 100 * r.response_accuracy());
    std::printf("perplexity     %.4f (of the responses)\n", std::exp(r.response_mean()));
    std::printf("prompt NLL     %.5f nats/token over %lld prompt tokens\n", r.prompt_mean(),
                static_cast<long long>(r.prompt_tokens));
    if (pairs)
      std::printf("pairs          %lld: the chosen answer preferred in %.1f%%, mean margin %.4f nats\n",
                  static_cast<long long>(s.pairs), 100 * s.accuracy, s.margin);
    std::printf("time           %.1f s\n", seconds);
  }
  std::fflush(stdout);
}

// rfa eval accuracy: examples only.
void run_accuracy(const EvalArgs& a) {
  LoadedModel m = model_load(a.model, a.options.precision);
  const EvalText text = text_load(a, m);
  if (!text.examples)
    fail("rfa eval accuracy scores examples (data.format mqar, alpaca, prompt_completion), but {} holds {} data; use "
         "`rfa eval perplexity` for a text",
         text.source, enum_name(format_of(a, m)));
  Timer clock;
  const ExampleNll r = examples_evaluate(*m.model, *text.examples, a.options.precision);
  if (r.examples == 0)
    fail("none of the {} examples of {} fits model.context_length + 1 = {} tokens; nothing was scored",
         text.examples->count, text.source, m.config.model.context_length + 1);
  const double seconds = clock.seconds();
  const std::string kind = model_spec_attention_text(m.model->spec);
  const char* what = text.examples->docs.answers_only() ? "answers" : "response tokens";
  if (a.json) {
    std::printf("{\"checkpoint\": %s, \"step\": %lld, \"attention\": %s, \"source\": %s, \"targets\": %s, "
                "\"examples\": %lld, \"skipped\": %lld, \"scored\": %lld, \"correct\": %lld, \"accuracy\": %s, "
                "\"mean_nll\": %s, \"seconds\": %s}\n",
                json_quote(m.checkpoint_dir).c_str(), static_cast<long long>(m.step), json_quote(kind).c_str(),
                json_quote(text.source).c_str(), json_quote(what).c_str(), static_cast<long long>(r.examples),
                static_cast<long long>(r.too_long), static_cast<long long>(r.response_tokens),
                static_cast<long long>(r.response_correct), json_number(r.response_accuracy()).c_str(),
                json_number(r.response_mean()).c_str(), json_number(seconds).c_str());
  } else {
    std::printf("checkpoint     %s (step %lld, %s)\n", m.checkpoint_dir.c_str(), static_cast<long long>(m.step),
                kind.c_str());
    std::printf("data           %s\n", text.source.c_str());
    std::printf("examples       %lld scored, each alone from an empty state; %lld too long skipped\n",
                static_cast<long long>(r.examples), static_cast<long long>(r.too_long));
    std::printf("accuracy       %.4f (%lld of %lld %s: the target is the argmax)\n", r.response_accuracy(),
                static_cast<long long>(r.response_correct), static_cast<long long>(r.response_tokens), what);
    std::printf("mean NLL       %.5f nats/token over the same %s\n", r.response_mean(), what);
    std::printf("time           %.1f s\n", seconds);
  }
  std::fflush(stdout);
}

void run_eval(const EvalArgs& a) {
  if (a.max_tokens < 0) fail("--max-tokens {} must be >= 0 (0 = all)", a.max_tokens);
  LoadedModel m = model_load(a.model, a.options.precision);
  EvalText text = text_load(a, m);
  if (text.examples) return report_examples(a, m, text);
  log_info("eval", "{}: {} tokens, {} bytes", text.source, text.tokens.size(), text.bytes);
  PerplexityResult r = perplexity_evaluate(*m.model, text.tokens, text.bytes, a.options, text.starts);
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
  cmd->add_option("--format", args->format,
                  "What --data (or the token file) holds: text|jsonl|alpaca|prompt_completion (default: the run's "
                  "data.format); alpaca and prompt_completion score each example's response");
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

  auto acc = std::make_shared<EvalArgs>();
  CLI::App* accuracy = group->add_subcommand(
      "accuracy", "Examples (mqar: the answers): share of targets that are the argmax, and their mean NLL");
  accuracy->add_option("model", acc->model, "Run directory or checkpoint directory")->required();
  accuracy->add_option("--split", acc->split, "Split of the run's token file: val or train")->capture_default_str();
  accuracy->add_option("--tokens", acc->tokens_path, "Token file (default: the config's data.tokens)");
  accuracy->add_flag("--json", acc->json, "Print one JSON object instead of a table");
  cli_add_precision(*accuracy, acc->options.precision);
  accuracy->callback([acc, &action] { action = [acc] { run_accuracy(*acc); }; });
}

}  // namespace rfa
