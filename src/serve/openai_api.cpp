#include "serve/openai_api.h"

#include <cmath>
#include <limits>
#include <mutex>
#include <random>

#include "serve/serve_error.h"

namespace rfa {
namespace {

using nlohmann::json;

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_float: return "a number";
    default: return "an integer";
  }
}

// A short view of a value for a message.
std::string shown(const json& v) {
  std::string s = api_dump(v);
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

// The member `key` of the body when present and not null.
const json* member(const json& body, const char* key) {
  auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

int64_t integer_field(const json& body, const char* key, int64_t lo, int64_t hi, int64_t fallback) {
  const json* v = member(body, key);
  if (!v) return fallback;
  // 3.0 is an integer in JSON's eyes for many clients; 3.5 is not.
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (d == std::floor(d) && d >= double(lo) && d <= double(hi)) return static_cast<int64_t>(d);
  }
  if (!v->is_number_integer())
    request_fail(key, "'{}' must be an integer from {} to {}, got {} ({})", key, lo, hi, shown(*v), type_name(*v));
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    request_fail(key, "'{}' must be an integer from {} to {}, got {}", key, lo, hi, shown(*v));
  const int64_t x = v->get<int64_t>();
  if (x < lo || x > hi) request_fail(key, "'{}' must be an integer from {} to {}, got {}", key, lo, hi, x);
  return x;
}

double number_field(const json& body, const char* key, double lo, double hi, bool lo_open, double fallback) {
  const json* v = member(body, key);
  if (!v) return fallback;
  if (!v->is_number())
    request_fail(key, "'{}' must be a number in {}{}, {}], got {} ({})", key, lo_open ? "(" : "[", lo, hi, shown(*v),
                 type_name(*v));
  const double x = v->get<double>();
  if (!(lo_open ? x > lo : x >= lo) || !(x <= hi))
    request_fail(key, "'{}' must be a number in {}{}, {}], got {}", key, lo_open ? "(" : "[", lo, hi, x);
  return x;
}

bool bool_field(const json& body, const char* key, bool fallback) {
  const json* v = member(body, key);
  if (!v) return fallback;
  if (!v->is_boolean()) request_fail(key, "'{}' must be true or false, got {} ({})", key, shown(*v), type_name(*v));
  return v->get<bool>();
}

std::vector<int32_t> token_array(const json& v, const char* key) {
  std::vector<int32_t> out;
  for (const json& t : v) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > std::numeric_limits<int32_t>::max())
      request_fail(key, "'{}' as an array holds token ids (integers >= 0), got {}", key, shown(t));
    out.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  return out;
}

void prompt_read(const json& body, ApiRequest& r) {
  const json* p = member(body, "prompt");
  if (!p) request_fail("prompt", "'prompt' is missing; give the text to continue as a string");
  if (p->is_string()) {
    r.prompt = p->get<std::string>();
    return;
  }
  if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array())) {
    if ((*p)[0].is_string())
      r.prompt = (*p)[0].get<std::string>();
    else
      r.prompt = token_array((*p)[0], "prompt");
    return;
  }
  if (p->is_array() && !p->empty() && ((*p)[0].is_string() || (*p)[0].is_array()))
    request_fail("prompt", "'prompt' holds {} prompts; this server takes one per request (send one request each)",
                 p->size());
  if (p->is_array()) {
    r.prompt = token_array(*p, "prompt");
    return;
  }
  request_fail("prompt", "'prompt' must be a string or an array of token ids, got {} ({})", shown(*p), type_name(*p));
}

std::string content_read(const json& m, size_t i) {
  auto it = m.find("content");
  if (it == m.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array()) {  // content parts: only text ones
    std::string text;
    for (const json& part : *it) {
      if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string())
        request_fail("messages", "messages[{}].content: only text parts ({{\"type\": \"text\", \"text\": ...}}) are "
                                 "supported, got {}",
                     i, shown(part));
      text += part["text"].get<std::string>();
    }
    return text;
  }
  request_fail("messages", "messages[{}].content must be a string, got {} ({})", i, shown(*it), type_name(*it));
}

void messages_read(const json& body, ApiRequest& r) {
  const json* ms = member(body, "messages");
  if (!ms || !ms->is_array() || ms->empty())
    request_fail("messages", "'messages' must be a non-empty array of {{\"role\", \"content\"}} objects, got {}",
                 ms ? shown(*ms) : std::string("nothing"));
  for (size_t i = 0; i < ms->size(); ++i) {
    const json& m = (*ms)[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      request_fail("messages", "messages[{}] must be an object with a string 'role', got {}", i, shown(m));
    std::string role = m["role"].get<std::string>();
    if (role == "developer") role = "system";  // OpenAI's newer name for it
    if (const std::string problem = chat_role_problem(role); !problem.empty())
      request_fail("messages", "messages[{}]: {}", i, problem);
    r.messages.push_back({role, content_read(m, i)});
  }
}

void stop_read(const json& body, const ApiLimits& limits, std::vector<std::string>& out) {
  const json* s = member(body, "stop");
  if (!s) return;
  auto add = [&](const json& v) {
    if (!v.is_string()) request_fail("stop", "'stop' holds strings, got {} ({})", shown(v), type_name(v));
    std::string text = v.get<std::string>();
    if (text.size() > limits.max_stop_bytes)
      request_fail("stop", "a stop string has {} bytes; at most {} are allowed", text.size(), limits.max_stop_bytes);
    if (!text.empty()) out.push_back(std::move(text));
  };
  if (s->is_array()) {
    if (static_cast<int>(s->size()) > limits.max_stops)
      request_fail("stop", "'stop' has {} strings; at most {} are allowed", s->size(), limits.max_stops);
    for (const json& v : *s) add(v);
  } else {
    add(*s);
  }
}

}  // namespace

uint64_t api_seed_random() {
  static std::mutex mutex;
  static std::mt19937_64 gen{std::random_device{}()};
  std::lock_guard<std::mutex> lock(mutex);
  return gen();
}

json api_body_parse(const std::string& body) {
  json j;
  try {
    j = json::parse(body);
  } catch (const json::parse_error& e) {
    request_fail("", "the request body is not valid JSON (UTF-8): {}", e.what());
  }
  if (!j.is_object()) request_fail("", "the request body must be a JSON object, got {}", type_name(j));
  return j;
}

ApiRequest api_request_read(const json& body, bool chat, const ApiLimits& limits) {
  ApiRequest r;
  r.chat = chat;
  if (const json* m = member(body, "model"); m && !m->is_string())
    request_fail("model", "'model' must be a string, got {} ({})", shown(*m), type_name(*m));
  if (chat)
    messages_read(body, r);
  else
    prompt_read(body, r);
  GenerationParams& p = r.params;
  const char* max_key = chat && member(body, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  p.max_tokens = integer_field(body, max_key, 1, limits.max_tokens_limit, limits.max_tokens_default);
  p.sampler.temperature = number_field(body, "temperature", 0, 2, false, 1.0);
  p.sampler.greedy = p.sampler.temperature == 0;
  p.sampler.top_p = number_field(body, "top_p", 0, 1, true, 1.0);
  p.sampler.top_k = static_cast<int>(integer_field(body, "top_k", 0, std::numeric_limits<int32_t>::max(), 0));
  if (const json* s = member(body, "seed")) {
    if (s->is_number_unsigned())
      p.sampler.seed = s->get<uint64_t>();
    else if (s->is_number_integer())
      p.sampler.seed = static_cast<uint64_t>(s->get<int64_t>());
    else
      request_fail("seed", "'seed' must be an integer, got {} ({})", shown(*s), type_name(*s));
  } else {
    p.sampler.seed = api_seed_random();
  }
  p.n = static_cast<int>(integer_field(body, "n", 1, 128, 1));
  stop_read(body, limits, p.stop);
  r.stream = bool_field(body, "stream", false);
  if (const json* so = member(body, "stream_options")) {
    if (!so->is_object())
      request_fail("stream_options", "'stream_options' must be an object, got {} ({})", shown(*so), type_name(*so));
    r.include_usage = bool_field(*so, "include_usage", false);
  }
  return r;
}

json api_usage_json(const ApiUsage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

json api_error_json(const std::string& message, const std::string& type, const std::string& param) {
  return {{"error",
           {{"message", message}, {"type", type}, {"param", param.empty() ? json() : json(param)}, {"code", json()}}}};
}

std::string api_dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json api_response_json(const ApiResponseHead& h, const std::vector<ApiChoice>& choices, const ApiUsage& usage) {
  json cs = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    json c = {{"index", i}, {"logprobs", json()}, {"finish_reason", choices[i].finish_reason}};
    if (h.chat)
      c["message"] = {{"role", "assistant"}, {"content", choices[i].text}};
    else
      c["text"] = choices[i].text;
    cs.push_back(std::move(c));
  }
  return {{"id", h.id},          {"object", h.chat ? "chat.completion" : "text_completion"},
          {"created", h.created}, {"model", h.model},
          {"choices", cs},        {"usage", api_usage_json(usage)}};
}

json api_chunk_json(const ApiResponseHead& h, int index, const std::string& text, const std::string& finish_reason,
                    bool role_only) {
  json c = {{"index", index}, {"logprobs", json()},
            {"finish_reason", finish_reason.empty() ? json() : json(finish_reason)}};
  if (h.chat) {
    if (role_only)
      c["delta"] = {{"role", "assistant"}, {"content", ""}};
    else if (finish_reason.empty())
      c["delta"] = {{"content", text}};
    else
      c["delta"] = json::object();
  } else {
    c["text"] = text;
  }
  return {{"id", h.id},
          {"object", h.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", h.created},
          {"model", h.model},
          {"choices", json::array({c})}};
}

ApiTextChunks::ApiTextChunks(const ApiResponseHead& head, int n) : head_(head) {
  // The text's place: a control character the dump writes as \u0001, found once in the frame
  // (a model name holding one too would make it ambiguous: that choice builds its tree instead).
  constexpr std::string_view kMarker = "\"\\u0001\"";
  for (int c = 0; c < n; ++c) {
    const std::string frame = api_dump(api_chunk_json(head, c, "\x01", ""));
    const size_t at = frame.find(kMarker);
    if (at == std::string::npos || frame.find(kMarker, at + 1) != std::string::npos) {
      frames_.emplace_back();
      continue;
    }
    frames_.emplace_back("data: " + frame.substr(0, at), frame.substr(at + kMarker.size()) + "\n\n");
  }
}

void ApiTextChunks::append(std::string& out, int choice, const std::string& text) const {
  const auto& [before, after] = frames_.at(static_cast<size_t>(choice));
  if (before.empty()) {
    out += "data: " + api_dump(api_chunk_json(head_, choice, text, "")) + "\n\n";
    return;
  }
  out += before;
  out += api_dump(json(text));  // the string, quoted and escaped as in the whole dump
  out += after;
}

json api_usage_chunk_json(const ApiResponseHead& h, const ApiUsage& usage) {
  return {{"id", h.id},
          {"object", h.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", h.created},
          {"model", h.model},
          {"choices", json::array()},
          {"usage", api_usage_json(usage)}};
}

}  // namespace rfa
