#include "serve/http_server.h"

#include <httplib.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>

#include "core/error.h"
#include "core/log.h"
#include "serve/api_key.h"
#include "serve/listen_backlog.h"
#include "serve/metrics_text.h"
#include "serve/peer_socket.h"
#include "serve/reply_writer.h"
#include "serve/serve_error.h"

namespace rfa {

using nlohmann::json;

std::vector<int32_t> chat_tokens(const Tokenizer& tok, const ChatTemplate& t, std::span<const ChatMessage> messages) {
  std::vector<int32_t> tokens;
  for (const std::string& piece : t.render(messages)) tok.encode_append(piece, tokens);
  return tokens;
}

namespace {

const char* const kEndpoints[] = {"/health",   "/v1/models", "/v1/completions",  "/v1/chat/completions",
                                  "/tokenize", "/detokenize", "/metrics",         "/v1/states/save",
                                  "/v1/states/load"};

void error_reply(httplib::Response& res, int status, const std::string& type, const std::string& message,
                 const std::string& param = "") {
  res.status = status;
  res.set_content(api_dump(api_error_json(message, type, param)), "application/json");
}

const char* status_type(int status) {
  switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 413: return "invalid_request_error";
    case 503: return "server_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

}  // namespace

struct HttpServer::Impl {
  Engine& engine;
  const Tokenizer& tok;
  StateCache* cache;
  const ChatTemplate& chat_template;
  const StateFiles* files;
  ServerOptions o;
  httplib::Server svr;
  std::atomic<bool> draining{false};
  std::atomic<int64_t> next_id{1};
  std::mutex counts_mutex;
  std::map<std::pair<std::string, int>, int64_t> counts;  // (endpoint, status) -> requests

  Impl(Engine& e, const Tokenizer& t, StateCache* c, const ChatTemplate& ct, const StateFiles* f,
       const ServerOptions& opt)
      : engine(e), tok(t), cache(c), chat_template(ct), files(f), o(opt) {}

  void count(const std::string& path, int status) {
    std::string endpoint = "other";
    for (const char* e : kEndpoints)
      if (path == e) endpoint = e;
    std::lock_guard<std::mutex> lock(counts_mutex);
    ++counts[{endpoint, status}];
  }

  // Runs a handler body, answering a ServeError or any other failure in the OpenAI error shape.
  template <typename F>
  void guarded(httplib::Response& res, F body) {
    try {
      body();
    } catch (const ServeError& e) {
      error_reply(res, e.status, e.type, e.what(), e.param);
      if (e.status == 503) res.set_header("Retry-After", "1");
    } catch (const Error& e) {
      error_reply(res, 400, "invalid_request_error", e.what());
    } catch (const std::exception& e) {
      error_reply(res, 500, "server_error", fmt::format("internal error: {}", e.what()));
    }
  }

  json body_of(const httplib::Request& req) { return api_body_parse(req.body); }

  std::vector<int32_t> tokens_of(const json& body, const char* key) {
    auto it = body.find(key);
    if (it == body.end() || !it->is_array()) request_fail(key, "'{}' must be an array of token ids", key);
    std::vector<int32_t> out;
    for (const json& t : *it) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= tok.vocab_size())
        request_fail(key, "'{}' holds token ids in [0, {}), got {}", key, tok.vocab_size(), api_dump(t));
      out.push_back(static_cast<int32_t>(t.get<int64_t>()));
    }
    return out;
  }

  // The prompt tokens of a completions or chat body (for generation and for state files).
  std::vector<int32_t> prompt_tokens(const ApiRequest& r) {
    if (r.chat) return chat_tokens(tok, chat_template, r.messages);
    if (const auto* text = std::get_if<std::string>(&r.prompt)) return tok.encode(*text);
    return std::get<std::vector<int32_t>>(r.prompt);
  }

  void generate(const httplib::Request& req, httplib::Response& res, bool chat) {
    const ApiRequest r = api_request_read(body_of(req), chat, o.limits);
    GenerationRequest g;
    g.prompt = prompt_tokens(r);
    g.params = r.params;
    if (chat)
      for (const std::string& s : chat_template.stops)
        if (std::find(g.params.stop.begin(), g.params.stop.end(), s) == g.params.stop.end()) g.params.stop.push_back(s);
    std::shared_ptr<RequestHandle> handle = engine.submit(std::move(g));
    ApiResponseHead head;
    head.chat = chat;
    head.id = fmt::format("{}-{}", chat ? "chatcmpl" : "cmpl", next_id++);
    head.created = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch()).count();
    head.model = o.model_name;
    const int fd = peer_socket_find(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
    const int n = r.params.n;
    if (r.stream) {
      auto st = std::make_shared<ReplyStream>();
      st->handle = handle;
      st->head = head;
      st->n = n;
      st->include_usage = r.include_usage;
      st->fd = fd;
      res.set_header("Cache-Control", "no-cache");
      res.set_header("X-Accel-Buffering", "no");  // proxies in front: do not buffer the stream
      res.set_chunked_content_provider(
          "text/event-stream", [st](size_t, httplib::DataSink& sink) { return st->write_some(sink); },
          [st](bool) {
            if (!st->handle->done()) st->handle->cancel();  // the connection ended first
          });
      return;
    }
    const CollectedReply reply = reply_collect(*handle, n, fd);
    if (reply.client_gone) {
      res.status = 499;
      return;
    }
    if (!reply.error.empty())
      throw ServeError(reply.error.find("shutting down") != std::string::npos ? 503 : 500, "server_error", "",
                       reply.error);
    res.set_content(api_dump(api_response_json(head, reply.choices, usage_of(*handle, n))), "application/json");
  }

  void tokenize(const httplib::Request& req, httplib::Response& res) {
    const json body = body_of(req);
    auto it = body.find("content");
    if (it == body.end() || !it->is_string()) request_fail("content", "'content' must be the text to tokenize");
    res.set_content(api_dump({{"tokens", tok.encode(it->get<std::string>())}}), "application/json");
  }

  void detokenize(const httplib::Request& req, httplib::Response& res) {
    const std::vector<int32_t> tokens = tokens_of(body_of(req), "tokens");
    res.set_content(api_dump({{"content", tok.decode(tokens)}}), "application/json");
  }

  void models(httplib::Response& res) {
    const json model = {{"id", o.model_name}, {"object", "model"}, {"created", 0}, {"owned_by", "rfa"}};
    res.set_content(api_dump({{"object", "list"}, {"data", json::array({model})}}), "application/json");
  }

  void metrics(httplib::Response& res) {
    MetricsText m;
    {
      std::lock_guard<std::mutex> lock(counts_mutex);
      m.type("rfa_requests_total", "counter", "HTTP requests answered, by endpoint and status");
      for (const auto& [key, value] : counts)
        m.sample("rfa_requests_total", value,
                 fmt::format("endpoint=\"{}\",status=\"{}\"", key.first, key.second));
    }
    const EngineStats s = engine.stats();
    const StateCacheStats c = cache ? cache->stats() : StateCacheStats{};
    struct Row {
      const char *name, *type, *help;
      int64_t value;
    };
    for (const Row& r : std::initializer_list<Row>{
             {"rfa_requests_active", "gauge", "requests being prefilled or decoded", s.active},
             {"rfa_requests_queued", "gauge", "requests waiting for a slot", s.queued},
             {"rfa_slots", "gauge", "sequences decoded at once (--parallel)", s.slots},
             {"rfa_requests_finished_total", "counter", "requests whose choices all ended", s.finished},
             {"rfa_requests_cancelled_total", "counter", "choices cancelled (the client went away)", s.cancelled},
             {"rfa_requests_rejected_total", "counter", "requests refused with 503 (queue full)", s.rejected},
             {"rfa_requests_failed_total", "counter", "choices ended by an error", s.errors},
             {"rfa_prompt_tokens_total", "counter", "prompt tokens of admitted requests", s.prompt_tokens},
             {"rfa_prompt_tokens_cached_total", "counter", "prompt tokens restored from the cache", s.cached_tokens},
             {"rfa_prompt_tokens_prefilled_total", "counter", "prompt tokens run through the model",
              s.prefilled_tokens},
             {"rfa_completion_tokens_total", "counter", "tokens sampled", s.completion_tokens},
             {"rfa_cache_bytes", "gauge", "bytes held by the state cache", c.bytes},
             {"rfa_cache_limit_bytes", "gauge", "the state cache's bound (--cache-mib)", c.limit},
             {"rfa_cache_entries", "gauge", "states in the cache", c.entries},
             {"rfa_cache_hits_total", "counter", "requests that found a cached prefix", c.hits},
             {"rfa_cache_misses_total", "counter", "requests that found none", c.misses},
             {"rfa_cache_evictions_total", "counter", "states dropped to stay within the bound", c.evictions},
             {"rfa_decode_steps_total", "counter", "batched decode steps run", s.times.decode_steps},
             {"rfa_decode_rows_total", "counter", "sequences fed over those steps (per step: the batch)",
              s.times.decode_rows}})
      m.metric(r.name, r.type, r.help, r.value);
    // Where the scheduler's time goes (engine.h, SchedulerTimes).
    m.metric("rfa_scheduler_busy_seconds_total", "counter", "wall time of scheduler ticks with requests to run",
             s.times.busy);
    m.metric("rfa_decode_seconds_total", "counter", "wall time in batched decode steps", s.times.decode);
    m.metric("rfa_prefill_seconds_total", "counter", "wall time in prompt prefill passes", s.times.prefill);
    m.metric("rfa_cache_store_seconds_total", "counter", "wall time storing states in the cache", s.times.store);
    res.set_content(m.text(), "text/plain; version=0.0.4");
  }

  void state_save(const httplib::Request& req, httplib::Response& res) {
    const json body = body_of(req);
    const std::string name = body.value("name", json()).is_string() ? body["name"].get<std::string>() : "";
    if (const std::string p = StateFiles::name_problem(name); !p.empty())
      request_fail("name", "'name' {}: {}", api_dump(body.value("name", json())), p);
    const bool chat = body.contains("messages");
    const ApiRequest r = api_request_read(body, chat, o.limits);
    const std::vector<int32_t> tokens = prompt_tokens(r);
    std::shared_ptr<const CacheEntry> entry = cache->find_exact(tokens);
    if (!entry) entry = cache->find_prefix(tokens);
    if (!entry)
      throw ServeError(404, "not_found_error", "prompt",
                       "no cached state begins with this prompt; send the conversation as a request first");
    files->save(name, {entry, r.messages});
    res.set_content(api_dump({{"name", name}, {"tokens", entry->tokens.size()}}), "application/json");
  }

  void state_load(const httplib::Request& req, httplib::Response& res) {
    const json body = body_of(req);
    const std::string name = body.value("name", json()).is_string() ? body["name"].get<std::string>() : "";
    if (const std::string p = StateFiles::name_problem(name); !p.empty())
      request_fail("name", "'name' {}: {}", api_dump(body.value("name", json())), p);
    StateFile f;
    try {
      f = files->load(name);
    } catch (const Error& e) {
      const bool missing = std::string(e.what()).find("does not exist") != std::string::npos;
      throw ServeError(missing ? 404 : 400, missing ? "not_found_error" : "invalid_request_error", "name", e.what());
    }
    if (!cache->insert(f.entry))
      request_fail("name", "state '{}' takes {} bytes, more than the whole state cache (--cache-mib)", name,
                   f.entry->bytes());
    json messages = json::array();
    for (const ChatMessage& m : f.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
    res.set_content(api_dump({{"name", name},
                              {"tokens", f.entry->tokens.size()},
                              {"text", tok.decode(f.entry->tokens)},
                              {"messages", messages}}),
                    "application/json");
  }

  void routes() {
    svr.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      if (draining) {
        res.status = 503;
        res.set_content(R"({"status":"shutting down"})", "application/json");
        return;
      }
      res.set_content(R"({"status":"ok"})", "application/json");
    });
    svr.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) { models(res); });
    svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) { metrics(res); });
    svr.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
      guarded(res, [&] { generate(req, res, false); });
    });
    svr.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      guarded(res, [&] { generate(req, res, true); });
    });
    svr.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
      guarded(res, [&] { tokenize(req, res); });
    });
    svr.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
      guarded(res, [&] { detokenize(req, res); });
    });
    if (files && cache) {
      svr.Post("/v1/states/save", [this](const httplib::Request& req, httplib::Response& res) {
        guarded(res, [&] { state_save(req, res); });
      });
      svr.Post("/v1/states/load", [this](const httplib::Request& req, httplib::Response& res) {
        guarded(res, [&] { state_load(req, res); });
      });
    }
  }

  void setup() {
    svr.new_task_queue = [threads = o.http_threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
    svr.set_read_timeout(o.timeout_seconds, 0);
    svr.set_write_timeout(o.timeout_seconds, 0);
    svr.set_keep_alive_timeout(5);
    // Each token is a small write: without TCP_NODELAY, Nagle's algorithm holds it until the client
    // acknowledges the previous one (up to its 40 ms delayed ACK).
    svr.set_tcp_nodelay(true);
    svr.set_payload_max_length(o.max_body_bytes);
    svr.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (o.api_key.empty() || req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
      const std::string_view problem = api_key_problem(o.api_key, req.get_header_value("Authorization"));
      if (problem.empty()) return httplib::Server::HandlerResponse::Unhandled;
      error_reply(res, 401, "authentication_error", std::string(problem));
      res.set_header("WWW-Authenticate", "Bearer");
      return httplib::Server::HandlerResponse::Handled;
    });
    // What the library answers by itself (no route, a body over the limit, a request that
    // did not read) in the same shape as our errors.
    svr.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      std::string message;
      if (res.status == 404)
        message = fmt::format("no endpoint {} {}; the endpoints are GET /health, GET /v1/models, GET /metrics, POST "
                              "/v1/completions, POST /v1/chat/completions, POST /tokenize, POST /detokenize{}",
                              req.method, req.path, files ? ", POST /v1/states/save, POST /v1/states/load" : "");
      else if (res.status == 413)
        message = fmt::format("the request body is larger than this server takes ({} bytes, --max-body-bytes)",
                              o.max_body_bytes);
      else if (res.status == 400)
        message = fmt::format("the request could not be read (malformed, or its body stopped arriving for {} s)",
                              o.timeout_seconds);
      else
        message = fmt::format("HTTP {} for {} {}", res.status, req.method, req.path);
      error_reply(res, res.status, status_type(res.status), message);
    });
    svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
      error_reply(res, 500, "server_error", "internal error");
    });
    svr.set_logger([this](const httplib::Request& req, const httplib::Response& res) { count(req.path, res.status); });
    routes();
  }
};

HttpServer::HttpServer(Engine& engine, const Tokenizer& tok, StateCache* cache, const ChatTemplate& t,
                       const StateFiles* files, const ServerOptions& o)
    : impl_(std::make_unique<Impl>(engine, tok, cache, t, files, o)) {
  impl_->setup();
}

HttpServer::~HttpServer() = default;

namespace {
constexpr int kListenBacklog = 1024;  // connections waiting for accept(); capped by net.core.somaxconn
}  // namespace

int HttpServer::bind() {
  Impl& m = *impl_;
  errno = 0;
  int port = m.o.port;
  const bool ok = port == 0 ? (port = m.svr.bind_to_any_port(m.o.host)) > 0 : m.svr.bind_to_port(m.o.host, port);
  if (!ok)
    fail("cannot listen on {}:{}: {}; is another server on that port? choose another with --port, or check --host",
         m.o.host, m.o.port, errno ? std::strerror(errno) : "the address does not resolve or bind");
  if (listen_backlog_raise(port, kListenBacklog) == 0)
    log_warn("serve", "could not raise the listen backlog of port {} (cpp-httplib's is 5): many clients connecting "
             "at once may see their connections reset", port);
  return port;
}

void HttpServer::listen() { impl_->svr.listen_after_bind(); }
void HttpServer::stop() { impl_->svr.stop(); }
void HttpServer::draining() { impl_->draining = true; }

}  // namespace rfa
