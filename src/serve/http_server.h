#pragma once
// The HTTP face of the engine (cpp-httplib): the OpenAI endpoints, tokenize, health,
// metrics and state files. Its worker threads parse, tokenize, submit to the engine and
// wait; they never run the model. docs/serving.md lists the endpoints and limits.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "serve/chat_template.h"
#include "serve/engine.h"
#include "serve/openai_api.h"
#include "serve/state_cache.h"
#include "serve/state_files.h"

namespace rfa {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                // 0: any free port (bind() returns it)
  std::string api_key;            // "" = none
  std::string model_name;         // the id /v1/models lists
  size_t max_body_bytes = 1 << 20;
  int timeout_seconds = 30;       // one read or write of a connection; idle keep-alive: 5 s
  int http_threads = 16;          // connections served at once
  ApiLimits limits;
};

class HttpServer {
 public:
  HttpServer(Engine& engine, const Tokenizer& tokenizer, StateCache* cache, const ChatTemplate& chat_template,
             const StateFiles* files, const ServerOptions& options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int bind();      // the port bound; throws Error naming host, port and the reason
  void listen();   // serves until stop(); call from one thread after bind()
  void stop();
  void draining(); // /health answers 503 from now on

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Prompt tokens of a chat: the template's pieces tokenized one by one (chat_template.h).
std::vector<int32_t> chat_tokens(const Tokenizer& tokenizer, const ChatTemplate& t,
                                 std::span<const ChatMessage> messages);

}  // namespace rfa
