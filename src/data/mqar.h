#pragma once
// Multi-query associative recall (MQAR; Arora et al. 2023, "Zoology"), the synthetic recall task
// of docs/recall.md: each example shows P key-value pairs, then asks for Q of the keys again;
// the targets are the values, the loss and accuracy are on those answers only.
//
// One example of sequence length T is T + 1 tokens (inputs the first T, targets the last T):
//   k_1 v_1 ... k_P v_P   blank x F   q_1 a_1 ... q_Q a_Q   EOS          F = T - 2P - 2Q >= 0
// keys P distinct symbols of [0, vocab/2), values P distinct symbols of [vocab/2, vocab), the
// queries q_i Q distinct keys in random order, a_i the value paired with q_i; the blank symbol
// (vocab) pads the gap between the pairs and the queries. Its response starts at q_1 (index
// 2P + F), and an mqar token file trains only on every second target from there: the a_i
// (DocumentTable::response_target).
//
// Symbols are one character each of a character tokenizer written beside the data (symbol s is
// U+4E00 + s, CJK ideographs, so that examples decode to readable text), so the data is a token
// file like any other and `rfa train` / `rfa eval` read it unchanged.
#include <cstdint>
#include <string>
#include <vector>

namespace rfa {

struct MqarOptions {
  int seq_len = 256;     // T
  int pairs = 16;        // P
  int queries = 0;       // Q; 0 = P (every key asked once)
  int vocab = 8192;      // key and value symbols (half each), besides the blank
  int64_t train = 20000;  // examples
  int64_t val = 1000;
  uint64_t seed = 1;
  int queries_or_pairs() const { return queries > 0 ? queries : pairs; }
};

// Throws Error naming the option and the fix when the options cannot make an example.
void mqar_check(const MqarOptions& o);

// Example `index` (0 .. train + val - 1; validation after train) as symbols: T + 1 of them,
// the last the end symbol -1 (the writer turns it into EOS). A pure function of (seed, index).
std::vector<int32_t> mqar_example(const MqarOptions& o, int64_t index);
// Index of q_1 (the response start) in an example.
inline int mqar_response_start(const MqarOptions& o) { return o.seq_len - 2 * o.queries_or_pairs(); }
inline int32_t mqar_blank(const MqarOptions& o) { return o.vocab; }

struct MqarFiles {
  std::string tokenizer;  // DIR/mqar.model
  std::string tokens;     // DIR/mqar.tokens
  std::string config;     // DIR/mqar.yaml: the data and tokenizer keys for `rfa train`
};

// Writes the tokenizer, the token file (format mqar, the last `val` examples validation) and
// a config fragment naming both into `dir` (created); logs what it wrote.
MqarFiles mqar_write(const MqarOptions& o, const std::string& dir);

}  // namespace rfa
