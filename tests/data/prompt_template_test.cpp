// The instruction templates, pinned character for character: `alpaca` is Stanford Alpaca's
// PROMPT_DICT (train.py), with and without an input; the response follows "### Response:"
// directly, as Alpaca appends the output to the source.
#include <doctest/doctest.h>

#include "data/prompt_template.h"

using namespace rfa;

TEST_CASE("prompt template: alpaca is Stanford Alpaca's exact prompt, with and without an input") {
  CHECK(prompt_render(PromptTemplate::alpaca, "Give three tips for staying healthy.", "") ==
        "Below is an instruction that describes a task. Write a response that appropriately completes the "
        "request.\n\n### Instruction:\nGive three tips for staying healthy.\n\n### Response:");
  CHECK(prompt_render(PromptTemplate::alpaca, "Which book is this verse from?", "In the beginning God created.") ==
        "Below is an instruction that describes a task, paired with an input that provides further context. Write a "
        "response that appropriately completes the request.\n\n### Instruction:\nWhich book is this verse "
        "from?\n\n### Input:\nIn the beginning God created.\n\n### Response:");
}

TEST_CASE("prompt template: alpaca_short drops the first paragraph and keeps the rest") {
  CHECK(prompt_render(PromptTemplate::alpaca_short, "Define X.", "") == "### Instruction:\nDefine X.\n\n### Response:");
  CHECK(prompt_render(PromptTemplate::alpaca_short, "Continue the verse.", "And God said") ==
        "### Instruction:\nContinue the verse.\n\n### Input:\nAnd God said\n\n### Response:");
}
