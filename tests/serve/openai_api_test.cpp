// The OpenAI request reader refuses each mistake with a 400 naming the field and the value;
// the API key check; the plain chat template; state file names.
#include <doctest/doctest.h>

#include <string>

#include "data/prompt_template.h"
#include "model/model_load.h"
#include "serve/api_key.h"
#include "serve/chat_template.h"
#include "serve/openai_api.h"
#include "serve/serve_error.h"
#include "serve/state_files.h"

using namespace rfa;
using nlohmann::json;

namespace {

ApiRequest read(const std::string& body, bool chat = false) {
  return api_request_read(api_body_parse(body), chat, ApiLimits{});
}

// The ServeError a body gets: its status, param and message.
ServeError refusal(const std::string& body, bool chat = false) {
  try {
    read(body, chat);
  } catch (const ServeError& e) {
    return e;
  }
  FAIL("accepted: " << body);
  return ServeError(0, "", "", "");
}

}  // namespace

TEST_CASE("openai request: the fields are read, unknown ones ignored, the defaults are OpenAI's") {
  ApiRequest r = read(R"({"prompt": "hi", "max_tokens": 7, "temperature": 0, "top_p": 0.5, "top_k": 3,
      "seed": 42, "stop": ["a", "b"], "n": 2, "stream": true, "stream_options": {"include_usage": true},
      "frequency_penalty": 0.1, "user": "x", "model": "whatever"})");
  CHECK(std::get<std::string>(r.prompt) == "hi");
  CHECK(r.params.max_tokens == 7);
  CHECK(r.params.sampler.greedy);
  CHECK(r.params.sampler.top_p == 0.5);
  CHECK(r.params.sampler.top_k == 3);
  CHECK(r.params.sampler.seed == 42);
  CHECK(r.params.stop == std::vector<std::string>{"a", "b"});
  CHECK(r.params.n == 2);
  CHECK(r.stream);
  CHECK(r.include_usage);
  ApiRequest d = read(R"({"prompt": [1, 2, 3], "stop": "x"})");
  CHECK(std::get<std::vector<int32_t>>(d.prompt) == std::vector<int32_t>{1, 2, 3});
  CHECK(d.params.max_tokens == ApiLimits{}.max_tokens_default);
  CHECK(d.params.sampler.temperature == 1.0);
  CHECK(d.params.sampler.top_p == 1.0);
  CHECK(d.params.sampler.top_k == 0);
  CHECK(d.params.stop == std::vector<std::string>{"x"});
  CHECK_FALSE(d.stream);
  ApiRequest c = read(R"({"messages": [{"role": "system", "content": "be brief"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
      "max_completion_tokens": 5})", true);
  REQUIRE(c.messages.size() == 2);
  CHECK(c.messages[1].content == "ab");
  CHECK(c.params.max_tokens == 5);
}

TEST_CASE("openai request: each mistake is a 400 naming the field and the value") {
  struct Case {
    const char* body;
    bool chat;
    const char* param;
    const char* says;
  };
  const Case cases[] = {
      {R"({"prompt": "x", "max_tokens": "ten"})", false, "max_tokens", "\"ten\""},
      {R"({"prompt": "x", "max_tokens": 0})", false, "max_tokens", "got 0"},
      {R"({"prompt": "x", "max_tokens": 100000})", false, "max_tokens", "from 1 to 4096"},
      {R"({"prompt": "x", "max_tokens": 2.5})", false, "max_tokens", "2.5"},
      {R"({"prompt": "x", "temperature": -1})", false, "temperature", "-1"},
      {R"({"prompt": "x", "temperature": "hot"})", false, "temperature", "a string"},
      {R"({"prompt": "x", "top_p": 0})", false, "top_p", "(0, 1]"},
      {R"({"prompt": "x", "top_k": -2})", false, "top_k", "-2"},
      {R"({"prompt": "x", "seed": "s"})", false, "seed", "\"s\""},
      {R"({"prompt": "x", "stop": ["a", "b", "c", "d", "e"]})", false, "stop", "5 strings"},
      {R"({"prompt": "x", "stop": 3})", false, "stop", "3"},
      {R"({"prompt": "x", "n": 0})", false, "n", "got 0"},
      {R"({"prompt": "x", "stream": "yes"})", false, "stream", "\"yes\""},
      {R"({"prompt": "x", "stream_options": 1})", false, "stream_options", "an integer"},
      {R"({"prompt": 5})", false, "prompt", "5"},
      {R"({"prompt": ["a", "b"]})", false, "prompt", "2 prompts"},
      {R"({"prompt": [1, -1]})", false, "prompt", "-1"},
      {R"({"max_tokens": 3})", false, "prompt", "missing"},
      {R"({"prompt": "x", "model": 7})", false, "model", "7"},
      {R"({"messages": []})", true, "messages", "non-empty"},
      {R"({"messages": [{"content": "x"}]})", true, "messages", "messages[0]"},
      {R"({"messages": [{"role": "robot", "content": "x"}]})", true, "messages", "'robot'"},
      {R"({"messages": [{"role": "user", "content": 5}]})", true, "messages", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", true, "messages", "text parts"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.body);
    const ServeError e = refusal(c.body, c.chat);
    CHECK(e.status == 400);
    CHECK(e.type == "invalid_request_error");
    CHECK(e.param == c.param);
    CHECK(std::string(e.what()).find(c.says) != std::string::npos);
  }
  for (const char* body : {"{", "[1]", "{\"prompt\": \"\xFF\"}", ""}) {
    CAPTURE(body);
    try {
      api_body_parse(body);
      FAIL("accepted");
    } catch (const ServeError& e) {
      CHECK(e.status == 400);
      CHECK(std::string(e.what()).find("JSON") != std::string::npos);
    }
  }
}

TEST_CASE("openai response: usage counts cached tokens; chunks have OpenAI's shape") {
  const json u = api_usage_json({10, 4, 6});
  CHECK(u["total_tokens"] == 14);
  CHECK(u["prompt_tokens_details"]["cached_tokens"] == 6);
  ApiResponseHead h{"chatcmpl-1", 5, "m", true};
  const json full = api_response_json(h, {{"hey", "stop"}}, {3, 1, 0});
  CHECK(full["object"] == "chat.completion");
  CHECK(full["choices"][0]["message"]["content"] == "hey");
  CHECK(full["choices"][0]["finish_reason"] == "stop");
  const json first = api_chunk_json(h, 0, "", "", true);
  CHECK(first["choices"][0]["delta"]["role"] == "assistant");
  const json text = api_chunk_json(h, 1, "a", "");
  CHECK(text["choices"][0]["index"] == 1);
  CHECK(text["choices"][0]["finish_reason"].is_null());
  CHECK(api_chunk_json(h, 0, "", "length")["choices"][0]["delta"].empty());
  CHECK(api_usage_chunk_json(h, {1, 2, 0})["choices"].empty());
  h.chat = false;
  CHECK(api_chunk_json(h, 0, "t", "")["choices"][0]["text"] == "t");
  CHECK(api_dump(json("a\xFF")) == "\"a\xEF\xBF\xBD\"");  // model bytes never break the JSON
  const json err = api_error_json("bad", "invalid_request_error", "n");
  CHECK(err["error"]["param"] == "n");
  CHECK(err["error"]["code"].is_null());
}

TEST_CASE("api key: Bearer and the exact key, compared whatever their lengths") {
  CHECK(secret_equal("sekrit", "sekrit"));
  CHECK_FALSE(secret_equal("sekrit", "sekrit2"));
  CHECK_FALSE(secret_equal("sekrit", "sekri"));
  CHECK_FALSE(secret_equal("sekrit", "Sekrit"));
  CHECK_FALSE(secret_equal("", ""));
  CHECK(api_key_problem("k1", "Bearer k1").empty());
  CHECK(api_key_problem("k1", "").find("Authorization: Bearer") != std::string_view::npos);
  CHECK(api_key_problem("k1", "Basic k1").find("Bearer KEY") != std::string_view::npos);
  CHECK(api_key_problem("k1", "Bearer k2") == "the API key is wrong");
}

TEST_CASE("chat template plain: one line per message, ending with the assistant's header; found by name") {
  const ChatTemplate& t = chat_template_find("plain");
  const std::vector<ChatMessage> m = {{"system", "S"}, {"user", "hi"}, {"assistant", "yo"}, {"user", "q"}};
  std::string text;
  for (const std::string& p : t.render(m)) text += p;
  CHECK(text == "System: S\nUser: hi\nAssistant: yo\nUser: q\nAssistant: ");
  // The reply stops where the model would begin the next user turn.
  CHECK(t.stops == std::vector<std::string>{"\nUser:"});
  // The pieces of a conversation begin with the pieces of any earlier prompt of it.
  const std::vector<std::string> early = t.render(std::span(m).first(2));
  const std::vector<std::string> late = t.render(m);
  CHECK(std::equal(early.begin(), early.end() - 1, late.begin()));
  CHECK_THROWS_WITH_AS(chat_template_find("chatml"), doctest::Contains("the templates are: plain"), Error);
  CHECK(chat_role_problem("tool").find("'tool'") != std::string::npos);
}

TEST_CASE("chat template alpaca: each user message an instruction as in training, replies after them") {
  const ChatTemplate& t = chat_template_find("alpaca");
  const std::vector<ChatMessage> m = {{"system", "S"}, {"user", "hi"}, {"assistant", "yo"}, {"user", "q"}};
  std::string text;
  for (const std::string& p : t.render(m)) text += p;
  CHECK(text == "S\n\n" + prompt_render(PromptTemplate::alpaca, "hi", "") + "yo\n\n" +
                    prompt_render(PromptTemplate::alpaca, "q", ""));
  CHECK(text.find("### Instruction:\nq\n\n### Response:") != std::string::npos);
  CHECK(text.ends_with("### Response:"));
  CHECK(t.stops == std::vector<std::string>{"\n### Instruction:"});
  // A conversation's pieces begin with every earlier request's pieces (the state cache's key).
  const std::vector<std::string> early = t.render(std::span(m).first(2));
  const std::vector<std::string> late = t.render(m);
  REQUIRE(early.size() < late.size());
  CHECK(std::equal(early.begin(), early.end(), late.begin()));
  // The short form drops the preamble; a conversation not ending with a user gets an empty instruction.
  std::string short_text;
  for (const std::string& p : chat_template_find("alpaca_short").render(std::span(m).first(3))) short_text += p;
  CHECK(short_text.find("Below is an instruction") == std::string::npos);
  CHECK(short_text.ends_with(prompt_render(PromptTemplate::alpaca_short, "", "")));
}

TEST_CASE("chat template of a run: an instruction-tuned run's own, else plain") {
  LoadedModel run;
  CHECK(chat_template_for_run(run) == "plain");  // text pretraining
  run.config.data.format = DataFormat::alpaca;
  CHECK(chat_template_for_run(run) == "alpaca");
  run.config.data.prompt_template = PromptTemplate::alpaca_short;
  CHECK(chat_template_for_run(run) == "alpaca_short");
  run.config.data.format = DataFormat::prompt_completion;  // prompts used as written
  CHECK(chat_template_for_run(run) == "plain");
}

TEST_CASE("state files: names cannot leave the directory") {
  for (const char* ok : {"a", "chat-1", "x.y_z", "A9"}) CHECK(StateFiles::name_problem(ok).empty());
  for (const char* bad : {"", ".hidden", "../x", "a/b", "a b", "..", "x\\y", "\xC3\xA9"})
    CHECK_FALSE(StateFiles::name_problem(bad).empty());
  CHECK_FALSE(StateFiles::name_problem(std::string(65, 'a')).empty());
}

TEST_CASE("openai stream: a text chunk from its pre-rendered frame is the dumped tree, byte for byte") {
  const std::vector<std::string> texts = {"",        "a",           " the",      "\"quoted\"", "back\\slash",
                                          "line\nbreak\t", std::string("nul\0in", 6), "\x01\x1f\x7f",
                                          "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80", "bad \xFF\xC3 bytes",
                                          "</script>", "\\u0001", "\"\\u0001\""};
  for (bool chat : {true, false})
    for (const std::string model : {"m", "run/with \"quotes\"", "two\x01marks\x01"}) {
      const ApiResponseHead h{chat ? "chatcmpl-9" : "cmpl-9", 1764806400, model, chat};
      const ApiTextChunks chunks(h, 3);
      for (int c = 0; c < 3; ++c)
        for (const std::string& t : texts) {
          INFO("chat ", chat, " model ", model, " choice ", c, " text ", t);
          std::string fast = "keep:";
          chunks.append(fast, c, t);
          CHECK(fast == "keep:data: " + api_dump(api_chunk_json(h, c, t, "")) + "\n\n");
        }
    }
}
