#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cli/config_options.h"
#include "support/test_files.h"

using namespace rfa;

namespace {
// Parses `args` (after the program name) for an app with one subcommand "run"
// carrying the config options.
ConfigOptions parse(std::vector<std::string> args) {
  CLI::App app{"test"};
  CLI::App* run = app.add_subcommand("run");
  ConfigOptions options;
  config_options_add(*run, options);
  args.insert(args.begin(), "run");
  std::reverse(args.begin(), args.end());  // CLI11 takes a reversed vector
  app.parse(args);
  return options;
}
}  // namespace

TEST_CASE("config options: --config, repeated --set in order, --dump-config") {
  std::string path = rfa::test::temp_file("options.yaml", "model:\n  n_layers: 6\n  d_model: 96\n");
  ConfigOptions o = parse({"--config", path, "--set", "model.n_layers=2", "--set=model.n_heads=3",
                           "--set", "model.n_layers=5"});
  CHECK(o.path == path);
  CHECK(o.sets == std::vector<std::string>{"model.n_layers=2", "model.n_heads=3", "model.n_layers=5"});
  CHECK_FALSE(o.dump);
  std::optional<Config> c = config_options_load(o);
  REQUIRE(c);
  CHECK(c->model.n_layers == 5);
  CHECK(c->model.n_heads == 3);
  CHECK(c->model.d_model == 96);
}

TEST_CASE("config options: --dump-config loads, prints, and returns nothing to run") {
  ConfigOptions o = parse({"--dump-config", "--set", "train.steps=7"});
  CHECK(o.dump);
  CHECK_FALSE(config_options_load(o).has_value());
}

TEST_CASE("config options: one value per --set, and errors surface from loading") {
  CHECK_THROWS_AS(parse({"--set", "model.n_layers=2", "train.steps=5"}), CLI::ParseError);
  ConfigOptions o = parse({"--set", "model.nlayers=2"});
  CHECK_THROWS_WITH_AS(config_options_load(o), doctest::Contains("did you mean 'model.n_layers'?"), Error);
}
