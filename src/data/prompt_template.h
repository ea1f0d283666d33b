#pragma once
// Instruction templates (data.template): how an alpaca example's instruction and optional
// input become the prompt the model continues with its response. The response follows the
// prompt's last character directly, as in Stanford Alpaca (train.py: source + target), and
// the two are encoded separately, so the prompt's tokens never depend on the response.
//   alpaca:       Stanford Alpaca's PROMPT_DICT, exactly: with an input
//                   "Below is an instruction that describes a task, paired with an input that provides
//                   further context. Write a response that appropriately completes the request.\n\n
//                   ### Instruction:\n{instruction}\n\n### Input:\n{input}\n\n### Response:"
//                 and without one (input empty or absent)
//                   "Below is an instruction that describes a task. Write a response that appropriately
//                   completes the request.\n\n### Instruction:\n{instruction}\n\n### Response:"
//   alpaca_short: the same without the first paragraph (its first sentence and the blank line after
//                 it), for small context lengths: "### Instruction:\n{instruction}\n\n### Response:" ...
#include <string>
#include <string_view>

#include "config/config.h"

namespace rfa {

std::string prompt_render(PromptTemplate t, std::string_view instruction, std::string_view input);

}  // namespace rfa
