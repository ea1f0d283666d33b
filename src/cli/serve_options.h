#pragma once
// The options `rfa serve` and `rfa chat` share (serve/serve_setup.h).
#include <CLI/CLI.hpp>

#include "serve/serve_setup.h"

namespace rfa {

void serve_options_add(CLI::App& cmd, ServeSetupOptions& o, bool server);

}  // namespace rfa
