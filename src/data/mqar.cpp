#include "data/mqar.h"

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "config/config.h"
#include "core/error.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/timer.h"
#include "data/token_file_format.h"
#include "data/token_file_writer.h"
#include "io/file_util.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_train.h"

namespace rfa {
namespace {

constexpr uint32_t kFirstCodepoint = 0x4E00;  // CJK unified ideographs: 20992 of them from here
constexpr int kMaxSymbols = 20992;
constexpr uint64_t kStream = 0x4D514152ull;    // "MQAR": the examples' stream under the seed

// The UTF-8 bytes of symbol s (a 3-byte character: U+4E00 .. U+9FFF).
std::string symbol_text(int32_t s) {
  const uint32_t c = kFirstCodepoint + static_cast<uint32_t>(s);
  return {static_cast<char>(0xE0 | (c >> 12)), static_cast<char>(0x80 | ((c >> 6) & 0x3F)),
          static_cast<char>(0x80 | (c & 0x3F))};
}

// count distinct values of [lo, lo + n) in random order: the first `count` of a partial Fisher-Yates shuffle.
void draw_distinct(CounterRng& rng, int32_t lo, int n, int count, std::vector<int32_t>& pool, int32_t* out) {
  pool.resize(static_cast<size_t>(n));
  std::iota(pool.begin(), pool.end(), lo);
  for (int i = 0; i < count; ++i) {
    const size_t j = static_cast<size_t>(i) + static_cast<size_t>(rng.below(static_cast<uint64_t>(n - i)));
    std::swap(pool[static_cast<size_t>(i)], pool[j]);
    out[i] = pool[static_cast<size_t>(i)];
  }
}

// A character tokenizer holding exactly the symbols 0..vocab (keys, values, blank): trained on a
// corpus of each symbol once, so its pieces are those characters, the 3 control and 256 byte tokens.
Tokenizer tokenizer_make(const MqarOptions& o, const std::string& dir, const std::string& path) {
  const std::string corpus = (std::filesystem::path(dir) / "mqar-symbols.txt").string();
  std::string text;
  for (int32_t s = 0; s <= mqar_blank(o); ++s) {
    text += symbol_text(s);
    if (s % 64 == 63) text += '\n';
  }
  text += '\n';
  file_write_atomic(corpus, text);
  TokenizerTrainOptions t;
  t.corpus = corpus;
  t.corpus_recorded = "mqar";  // rfa data mqar: no corpus of its own
  t.model_path = path;
  t.kind = TokenizerKind::character;
  t.vocab_size = 3 + 256 + mqar_blank(o) + 1;
  tokenizer_train(t);
  std::error_code ec;
  std::filesystem::remove(corpus, ec);
  return Tokenizer::load(path);
}

}  // namespace

void mqar_check(const MqarOptions& o) {
  const int Q = o.queries_or_pairs();
  if (o.pairs < 1) fail("mqar --pairs {} must be >= 1", o.pairs);
  if (o.queries < 0 || Q > o.pairs)
    fail("mqar --queries {} must be in [1, --pairs {}] (each query asks a different key; 0 = all of them)", o.queries,
         o.pairs);
  if (o.vocab < 2 * o.pairs || o.vocab % 2 != 0 || o.vocab > kMaxSymbols - 1)
    fail("mqar --vocab {} must be even, at least 2 x --pairs ({}, distinct keys and distinct values) and at most {}",
         o.vocab, 2 * o.pairs, kMaxSymbols - 2);
  if (2 * o.pairs + 2 * Q > o.seq_len)
    fail("mqar --seq-len {} is too short for {} pairs and {} queries, which take {} tokens; raise --seq-len to >= {} "
         "or lower --pairs / --queries",
         o.seq_len, o.pairs, Q, 2 * o.pairs + 2 * Q, 2 * o.pairs + 2 * Q);
  if (o.train < 1 || o.val < 1) fail("mqar --train {} and --val {} must both be >= 1", o.train, o.val);
}

std::vector<int32_t> mqar_example(const MqarOptions& o, int64_t index) {
  const int P = o.pairs, Q = o.queries_or_pairs(), K = o.vocab / 2;
  CounterRng rng(o.seed, kStream, static_cast<uint64_t>(index));
  std::vector<int32_t> keys(static_cast<size_t>(P)), values(static_cast<size_t>(P)), order(static_cast<size_t>(Q));
  std::vector<int32_t> pool;
  draw_distinct(rng, 0, K, P, pool, keys.data());
  draw_distinct(rng, K, K, P, pool, values.data());
  draw_distinct(rng, 0, P, Q, pool, order.data());  // which pairs are asked, in the order asked
  std::vector<int32_t> x;
  x.reserve(static_cast<size_t>(o.seq_len) + 1);
  for (int i = 0; i < P; ++i) {
    x.push_back(keys[static_cast<size_t>(i)]);
    x.push_back(values[static_cast<size_t>(i)]);
  }
  x.resize(static_cast<size_t>(mqar_response_start(o)), mqar_blank(o));
  for (int i = 0; i < Q; ++i) {
    const size_t pair = static_cast<size_t>(order[static_cast<size_t>(i)]);
    x.push_back(keys[pair]);
    x.push_back(values[pair]);
  }
  x.push_back(-1);
  RFA_ASSERT(x.size() == static_cast<size_t>(o.seq_len) + 1, "mqar example of {} symbols", x.size());
  return x;
}

MqarFiles mqar_write(const MqarOptions& o, const std::string& dir) {
  mqar_check(o);
  Timer timer;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail("cannot create --out directory {}: {}", dir, ec.message());
  namespace fs = std::filesystem;
  MqarFiles files{(fs::path(dir) / "mqar.model").string(), (fs::path(dir) / "mqar.tokens").string(),
                  (fs::path(dir) / "mqar.yaml").string()};
  const Tokenizer tok = tokenizer_make(o, dir, files.tokenizer);
  std::vector<int32_t> id(static_cast<size_t>(mqar_blank(o)) + 1);  // symbol -> token id
  for (int32_t s = 0; s <= mqar_blank(o); ++s) {
    const std::vector<int32_t> ids = tok.encode(symbol_text(s));
    RFA_ASSERT(ids.size() == 1, "mqar symbol {} is {} tokens", s, ids.size());
    id[static_cast<size_t>(s)] = ids[0];
  }
  TokenFileWriter writer(files.tokens, tok, kTokenFileDocumentsVersion);
  TokenFileHeader& h = writer.header();
  const int64_t D = o.train + o.val;
  std::vector<int64_t> table;  // (D, 2): start, response start
  table.reserve(static_cast<size_t>(2 * D));
  std::vector<int32_t> ids;
  for (int64_t e = 0; e < D; ++e) {
    const std::vector<int32_t> x = mqar_example(o, e);
    ids.clear();
    for (int32_t s : x) ids.push_back(s < 0 ? tok.eos_id() : id[static_cast<size_t>(s)]);
    table.push_back(h.tokens);
    table.push_back(h.tokens + mqar_response_start(o));
    writer.write(ids);
  }
  const int64_t N = h.tokens;
  h.split_document = o.train;
  h.split = table[static_cast<size_t>(2 * o.train)];
  h.val_bytes = writer.bytes_of(h.split, N, tok);
  h.train_bytes = writer.bytes_of(0, h.split, tok);
  h.documents = D;
  h.format = DataFormat::mqar;
  h.prompt_template = 0;
  h.eos_id = tok.eos_id();
  const int64_t end = token_file_header_size(h.version) + N * int64_t(h.token_width);
  const std::vector<char> pad(static_cast<size_t>(token_file_table_offset(h) - end), 0);
  writer.append_raw(pad.data(), pad.size());
  writer.append_raw(table.data(), table.size() * sizeof(int64_t));
  writer.commit();
  file_write_atomic(files.config,
                    fmt::format("# MQAR written by `rfa data mqar` (docs/recall.md): T {}, {} pairs, {} queries, vocab {}, "
                                "{} train / {} validation examples, seed {}\n"
                                "# rfa train --config <this file> --set train.run_dir=runs/mqar ...\n"
                                "model:\n  context_length: {}\n"
                                "tokenizer:\n  path: {}\n  kind: char\n"
                                "data:\n  format: mqar\n  tokens: {}\n",
                                o.seq_len, o.pairs, o.queries_or_pairs(), o.vocab, o.train, o.val, o.seed, o.seq_len,
                                files.tokenizer, files.tokens));
  log_info("data", "mqar: {} train + {} validation examples of {} tokens ({} pairs, {} queries, vocab {} + blank; "
           "tokenizer V {}) in {:.2f}s -> {}, {}, {}",
           o.train, o.val, o.seq_len + 1, o.pairs, o.queries_or_pairs(), o.vocab, tok.vocab_size(), timer.seconds(),
           files.tokens, files.tokenizer, files.config);
  return files;
}

}  // namespace rfa
