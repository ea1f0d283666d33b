#pragma once
// Each subcommand lives in its own file under src/cli/ and exposes one
// register function. A register function adds its CLI11 subcommand and, when
// that subcommand is chosen, stores the work to do in `action`; main() runs it
// after the global options (threads, logging) are applied.
#include <CLI/CLI.hpp>

#include <functional>

namespace rfa {

using CommandAction = std::function<void()>;

void register_tokenizer_command(CLI::App& app, CommandAction& action);  // rfa tokenizer train
void register_data_command(CLI::App& app, CommandAction& action);       // rfa data prepare
void register_train_command(CLI::App& app, CommandAction& action);      // rfa train
void register_bench_command(CLI::App& app, CommandAction& action);      // rfa bench train

}  // namespace rfa
