#include "serve/chat_template.h"

#include "config/config_enums.h"
#include "core/error.h"
#include "data/prompt_template.h"
#include "model/model_load.h"

namespace rfa {
namespace {

const char* plain_header(const std::string& role) {
  if (role == "system") return "System: ";
  if (role == "assistant") return "Assistant: ";
  return "User: ";
}

std::vector<std::string> plain_render(std::span<const ChatMessage> messages) {
  std::vector<std::string> pieces;
  for (const ChatMessage& m : messages) {
    pieces.emplace_back(plain_header(m.role));
    if (!m.content.empty()) pieces.push_back(m.content);
    pieces.emplace_back("\n");
  }
  pieces.emplace_back("Assistant: ");
  return pieces;
}

// An instruction-tuned run's template (data.template): each user message is an instruction
// rendered as in training (prompt_render, no input), each assistant message its response,
// turns separated by a blank line; a system message goes first, as its own paragraph. The
// model was tuned on one instruction at a time, so every turn reads as a fresh example
// after the earlier ones. Pieces: [system, "\n\n"], then per turn the rendered instruction
// and, for past turns, the response and "\n\n" (a conversation's pieces extend its earlier
// requests' pieces, as the state cache needs).
template <PromptTemplate kTemplate>
std::vector<std::string> instruction_render(std::span<const ChatMessage> messages) {
  std::vector<std::string> pieces;
  for (const ChatMessage& m : messages) {
    if (m.role == "user") {
      pieces.push_back(prompt_render(kTemplate, m.content, ""));
    } else if (!m.content.empty()) {  // system or assistant: the text as it is, then a blank line
      pieces.push_back(m.content);
      pieces.emplace_back("\n\n");
    }
  }
  // The reply answers the last instruction: a conversation that does not end with a user
  // message gets an empty instruction.
  if (messages.empty() || messages.back().role != "user") pieces.push_back(prompt_render(kTemplate, "", ""));
  return pieces;
}

// The table of templates: plain, and the instruction templates of data.template by their names.
const std::vector<ChatTemplate>& templates() {
  static const std::vector<ChatTemplate> table = {
      {"plain", {"\nUser:"}, plain_render},
      {"alpaca", {"\n### Instruction:"}, instruction_render<PromptTemplate::alpaca>},
      {"alpaca_short", {"\n### Instruction:"}, instruction_render<PromptTemplate::alpaca_short>},
  };
  return table;
}

}  // namespace

const ChatTemplate& chat_template_find(std::string_view name) {
  std::string names;
  for (const ChatTemplate& t : templates()) {
    if (t.name == name) return t;
    names += (names.empty() ? "" : ", ") + t.name;
  }
  fail("chat template '{}' is unknown; the templates are: {}", name, names);
}

std::string chat_template_for_run(const LoadedModel& loaded) {
  // An instruction-tuned run (data.format alpaca, or preference: DPO on top of one) renders
  // with the template it learned, as `rfa generate --instruction` does; any other run with plain.
  const DataConfig& d = loaded.config.data;
  if (d.format == DataFormat::alpaca || d.format == DataFormat::preference) return enum_name(d.prompt_template);
  return "plain";
}

std::string chat_role_problem(std::string_view role) {
  if (role == "system" || role == "user" || role == "assistant") return "";
  return fmt::format("role '{}' is not one of system, user, assistant", role);
}

}  // namespace rfa
