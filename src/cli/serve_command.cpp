// rfa serve RUN [--host 127.0.0.1] [--port 8080] [--api-key KEY] [--parallel N] [--queue N] [--cache-mib M] ...
// An OpenAI-compatible HTTP server over the engine (docs/serving.md). SIGINT/SIGTERM drain:
// no new requests, those in flight finish (up to --drain-seconds, then end with an error), exit 0.
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "cli/cli_checks.h"
#include "cli/commands.h"
#include "cli/serve_options.h"
#include "config/config_enums.h"
#include "core/error.h"
#include "core/log.h"
#include "core/memory_check.h"
#include "core/stop_signals.h"
#include "serve/http_server.h"
#include "serve/serve_setup.h"

namespace rfa {
namespace {

struct ServeArgs {
  ServeSetupOptions setup;
  ServerOptions server;
  int drain_seconds = 10;
};

bool host_is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

std::string model_name(const std::string& run) {
  std::filesystem::path p = std::filesystem::path(run).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

void run_serve(ServeArgs a) {
  if (a.server.api_key.empty())
    if (const char* key = std::getenv("RFA_API_KEY")) a.server.api_key = key;
  if (!host_is_loopback(a.server.host) && a.server.api_key.empty())
    fail("--host {} makes the server reachable from other machines, and it has no API key: anyone there could use "
         "it. Give --api-key KEY (or set RFA_API_KEY), or bind --host 127.0.0.1 (docs/serving.md, Security)",
         a.server.host);
  if (a.server.model_name.empty()) a.server.model_name = model_name(a.setup.run);
  StopSignals signals;  // before any thread starts: they inherit its mask (core/stop_signals.h)
  if (const std::string note = signals.ignored_note(); !note.empty()) log_warn("serve", "{}", note);
  // A client that closes its connection must not kill the server with SIGPIPE (the library writes without
  // MSG_NOSIGNAL); the write fails instead and the request is cancelled.
  std::signal(SIGPIPE, SIG_IGN);
  std::unique_ptr<ServeSetup> s = serve_setup(a.setup);
  a.server.limits.max_tokens_limit = std::max<int64_t>(1, a.server.limits.max_tokens_limit);
  a.server.limits.max_tokens_default = std::min(a.server.limits.max_tokens_default, a.server.limits.max_tokens_limit);
  a.server.http_threads = s->engine->slot_count() + a.setup.queue + 8;
  HttpServer server(*s->engine, *s->loaded.tokenizer, s->cache.get(), *s->chat_template, s->files.get(), a.server);
  const int port = server.bind();
  const ModelSpec& spec = s->loaded.model->spec;
  log_info("serve", "model {} ({}, {} layers, width {}), {} slots, queue {}, state cache {}, chat template {}, "
           "positions {}",
           a.server.model_name, enum_name(spec.attention.kind), spec.L, spec.C, s->engine->slot_count(),
           a.setup.queue, a.setup.cache_mib > 0 ? bytes_text(double(a.setup.cache_mib) * (1 << 20)) : "off",
           s->chat_template->name, s->max_positions > 0 ? std::to_string(s->max_positions) : "unlimited");
  if (!a.server.api_key.empty()) log_info("serve", "requests need 'Authorization: Bearer KEY' (all but /health)");
  log_info("serve", "listening on http://{}:{}", a.server.host, port);
  std::thread listener([&server] { server.listen(); });
  while (!stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  log_info("serve", "stop requested: draining (no new requests; up to {} s for those in flight)", a.drain_seconds);
  server.draining();
  const int cut = s->engine->drain(std::chrono::seconds(a.drain_seconds));
  if (cut > 0) log_warn("serve", "{} request(s) still running after {} s were ended with an error", cut, a.drain_seconds);
  // A moment for the handlers to write what the drain ended, then close every connection.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  server.stop();
  listener.join();
  log_info("serve", "stopped");
}

}  // namespace

void register_serve_command(CLI::App& app, CommandAction& action) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve a model over HTTP (OpenAI-compatible; docs/serving.md)");
  serve_options_add(*cmd, args->setup, true);
  cmd->add_option("--host", args->server.host, "Address to bind (another than loopback needs --api-key)")
      ->capture_default_str();
  cmd->add_option("--port", args->server.port, "Port (0 = any free one, printed)")
      ->capture_default_str()
      ->check(cli_integer_in(0, 65535));
  cmd->add_option("--api-key", args->server.api_key, "Require 'Authorization: Bearer KEY' (or set RFA_API_KEY)");
  cmd->add_option("--alias", args->server.model_name, "Model id in /v1/models and replies (default: the run's name)");
  cmd->add_option("--max-tokens", args->server.limits.max_tokens_limit, "Most tokens one reply may ask for")
      ->capture_default_str()
      ->check(cli_integer_in(1, int64_t{1} << 30));
  cmd->add_option("--default-max-tokens", args->server.limits.max_tokens_default,
                  "Reply length of a request that names no max_tokens")
      ->capture_default_str()
      ->check(cli_integer_in(1, int64_t{1} << 30));
  cmd->add_option("--max-body-bytes", args->server.max_body_bytes, "Largest request body")
      ->capture_default_str()
      ->check(cli_integer_in(1024, int64_t{1} << 30));
  cmd->add_option("--timeout", args->server.timeout_seconds,
                  "Seconds a connection may take for one read or write before it is closed")
      ->capture_default_str()
      ->check(cli_integer_in(1, 3600));
  cmd->add_option("--drain-seconds", args->drain_seconds, "On SIGINT/SIGTERM, seconds in-flight requests may finish")
      ->capture_default_str()
      ->check(cli_integer_in(0, 3600));
  cmd->callback([args, &action] { action = [args] { run_serve(*args); }; });
}

}  // namespace rfa
