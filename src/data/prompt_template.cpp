#include "data/prompt_template.h"

#include "core/error.h"

namespace rfa {
namespace {

constexpr std::string_view kWithInput =
    "Below is an instruction that describes a task, paired with an input that provides further context. "
    "Write a response that appropriately completes the request.\n\n";
constexpr std::string_view kWithoutInput =
    "Below is an instruction that describes a task. "
    "Write a response that appropriately completes the request.\n\n";

}  // namespace

std::string prompt_render(PromptTemplate t, std::string_view instruction, std::string_view input) {
  const bool has_input = !input.empty();  // Alpaca: example.get("input", "") != ""
  std::string out;
  switch (t) {
    case PromptTemplate::alpaca: out = has_input ? kWithInput : kWithoutInput; break;
    case PromptTemplate::alpaca_short: break;
    default: RFA_ASSERT(false, "unknown PromptTemplate {}", static_cast<int>(t));
  }
  out += "### Instruction:\n";
  out += instruction;
  if (has_input) {
    out += "\n\n### Input:\n";
    out += input;
  }
  out += "\n\n### Response:";
  return out;
}

}  // namespace rfa
