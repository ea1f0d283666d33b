#pragma once
// How chat messages become the text a model continues. A template is found by name, so a
// run that records one (the instruction template of a fine-tuned run, issue 24) plugs in
// as one more entry of the table in chat_template.cpp and one line in
// chat_template_for_run(). docs/serving.md, "Chat templates".
//   plain (the default): one line per message, "System: ", "User: " or "Assistant: " and
//          the content, each followed by "\n"; the prompt ends with "Assistant: " for the
//          reply, which stops at EOS or at "\nUser:" (the model starting the next turn).
// A template renders pieces (role headers, contents, separators) that are tokenized one by
// one: the tokens of a conversation then begin with the tokens of any earlier request of
// it, whatever the tokenizer merges across pieces, so the state cache finds it.
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rfa {

struct LoadedModel;

struct ChatMessage {
  std::string role;     // system | user | assistant
  std::string content;
};

struct ChatTemplate {
  std::string name;
  std::vector<std::string> stops;  // stop strings every reply under this template gets
  // The prompt for the assistant's next reply after `messages`, as pieces to tokenize one by one.
  std::vector<std::string> (*render)(std::span<const ChatMessage> messages);
};

// Throws Error naming the known templates.
const ChatTemplate& chat_template_find(std::string_view name);
// The template a run was trained for: "plain" until runs record one (the hook for issue 24).
std::string chat_template_for_run(const LoadedModel& loaded);

// "" when the role is system, user or assistant; else what is wrong.
std::string chat_role_problem(std::string_view role);

}  // namespace rfa
