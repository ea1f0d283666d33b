#pragma once
// The OpenAI wire format: request bodies of /v1/completions and /v1/chat/completions read
// into typed requests (every field checked for its type and range, unknown fields
// ignored; a mistake is a ServeError 400 naming the field, the value and what is allowed),
// and the response objects and stream chunks written back.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "serve/chat_template.h"
#include "serve/engine.h"

namespace rfa {

struct ApiLimits {
  int64_t max_tokens_default = 256;
  int64_t max_tokens_limit = 4096;  // --max-tokens
  int max_stops = 4;
  size_t max_stop_bytes = 256;
};

struct ApiRequest {
  bool chat = false;
  std::variant<std::string, std::vector<int32_t>> prompt;  // completions: text or token ids
  std::vector<ChatMessage> messages;                       // chat
  GenerationParams params;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
};

// Throws ServeError 400: not JSON (with where), not an object, a field of the wrong type or range.
nlohmann::json api_body_parse(const std::string& body);
ApiRequest api_request_read(const nlohmann::json& body, bool chat, const ApiLimits& limits);
// The random seed of a request that names none.
uint64_t api_seed_random();

struct ApiUsage {
  int64_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
};
nlohmann::json api_usage_json(const ApiUsage& u);

// {"error": {"message", "type", "param", "code"}}
nlohmann::json api_error_json(const std::string& message, const std::string& type, const std::string& param = "");

// Serialized with invalid UTF-8 (never in our text, but token bytes are a model's) replaced.
std::string api_dump(const nlohmann::json& j);

struct ApiResponseHead {
  std::string id;      // "cmpl-..." / "chatcmpl-..."
  int64_t created = 0;  // Unix seconds
  std::string model;
  bool chat = false;
};
struct ApiChoice {
  std::string text;
  std::string finish_reason;
};
nlohmann::json api_response_json(const ApiResponseHead& head, const std::vector<ApiChoice>& choices,
                                 const ApiUsage& usage);
// One stream chunk: a text delta (finish_reason empty) or a choice's end (text empty).
// role_only: chat's first chunk of a choice, {"role": "assistant", "content": ""}.
nlohmann::json api_chunk_json(const ApiResponseHead& head, int index, const std::string& text,
                              const std::string& finish_reason, bool role_only = false);
// The last chunk with stream_options.include_usage: no choices, the usage.
nlohmann::json api_usage_chunk_json(const ApiResponseHead& head, const ApiUsage& usage);

// A streamed reply's text chunks as server-sent events, byte for byte
// "data: " + api_dump(api_chunk_json(head, choice, text, "")) + "\n\n", from each choice's
// frame rendered once: the JSON before and after the text, split where it goes. Built
// and dumped as a tree, every token's event took a dozen allocations on the HTTP threads.
class ApiTextChunks {
 public:
  ApiTextChunks(const ApiResponseHead& head, int n);
  void append(std::string& out, int choice, const std::string& text) const;

 private:
  ApiResponseHead head_;
  std::vector<std::pair<std::string, std::string>> frames_;  // per choice; empty: build the tree
};

}  // namespace rfa
