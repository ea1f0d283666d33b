#pragma once
// Each subcommand lives in its own file under src/cli/ and exposes one
// register function. A register function adds its CLI11 subcommand and, when
// that subcommand is chosen, stores the work to do in `action`; main() runs it
// after the global options (threads, logging) are applied.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace rfa {

using CommandAction = std::function<void()>;

void register_tokenizer_command(CLI::App& app, CommandAction& action);  // rfa tokenizer train
void register_data_command(CLI::App& app, CommandAction& action);       // rfa data prepare
void register_train_command(CLI::App& app, CommandAction& action);      // rfa train
void register_bench_command(CLI::App& app, CommandAction& action);      // rfa bench train

// A parent command such as "bench" or "eval" that several files add
// subcommands to: the first caller creates it, later callers get it back.
inline CLI::App* subcommand_group(CLI::App& app, const std::string& name, const std::string& description) {
  for (CLI::App* sub : app.get_subcommands(std::function<bool(CLI::App*)>{}))
    if (sub->get_name() == name) return sub;
  CLI::App* group = app.add_subcommand(name, description);
  group->require_subcommand(1);
  return group;
}

void register_generate_command(CLI::App& app, CommandAction& action);        // rfa generate
void register_eval_command(CLI::App& app, CommandAction& action);            // rfa eval perplexity
void register_bench_decode_command(CLI::App& app, CommandAction& action);    // rfa bench decode
void register_bench_serve_command(CLI::App& app, CommandAction& action);     // rfa bench serve
void register_serve_command(CLI::App& app, CommandAction& action);           // rfa serve
void register_chat_command(CLI::App& app, CommandAction& action);            // rfa chat

}  // namespace rfa
