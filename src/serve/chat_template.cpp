#include "serve/chat_template.h"

#include "core/error.h"
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

// The table of templates. Issue 24's instruction template (data.template, e.g. alpaca) goes
// here as {"alpaca", {}, alpaca_render} with alpaca_render calling prompt_render().
const std::vector<ChatTemplate>& templates() {
  static const std::vector<ChatTemplate> table = {
      {"plain", {"\nUser:"}, plain_render},
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

std::string chat_template_for_run(const LoadedModel&) {
  // Issue 24 records the instruction template with a fine-tuned run (config data.template):
  // return its name here when it is set, so chat requests render with what the run learned.
  return "plain";
}

std::string chat_role_problem(std::string_view role) {
  if (role == "system" || role == "user" || role == "assistant") return "";
  return fmt::format("role '{}' is not one of system, user, assistant", role);
}

}  // namespace rfa
