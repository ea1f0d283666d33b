#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/file_util.h"
#include "io/hash.h"
#include "core/rng.h"
#include "support/corpus.h"
#include "support/temp_dir.h"
#include "support/trained_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_train.h"

using namespace rfa;
using rfa::test::TempDir;

namespace {

// Text the corpus never showed: accents, CJK, emoji, tabs, CR, runs of spaces and newlines, digits.
const std::vector<std::string> kHardTexts = {
    "",
    "the LORD said",
    "Héllo  wörld, ça va? Ωμέγα",
    "中文字符 and 日本語のテキスト",
    "emoji 😀🎉 family 👨‍👩‍👧 flag 🇫🇷",
    "\ttab\tseparated\tcolumns\t",
    "line one\nline two\n\nline four after a blank\n",
    "    four leading spaces, trailing three   ",
    "crlf line\r\nnext\r\n",
    "digits 0123456789 and 3.14159 and 1,000,000",
    "\n\n\n",
    " ",
    "mixed: naïve café über 42\n\t 😀 中\n",
};

Tokenizer train_small(const TempDir& dir, TokenizerKind kind, int vocab, const std::string& name) {
  return test::tokenizer_trained(dir, dir.write("corpus.txt", test::corpus_make(200)), name, kind, vocab);
}

void check_round_trips(const Tokenizer& tok) {
  std::string corpus = test::corpus_make(50, 7);
  std::vector<std::string> texts = kHardTexts;
  texts.push_back(corpus);
  for (const std::string& text : texts) {
    CAPTURE(text);
    std::vector<int32_t> ids = tok.encode(text);
    for (int32_t id : ids) REQUIRE((id >= 0 && id < tok.vocab_size()));
    CHECK(tok.decode(ids) == text);
    // Streaming output: per-token bytes concatenate to the text.
    std::string streamed;
    int64_t bytes = 0;
    for (int32_t id : ids) {
      streamed += tok.decode_token(id);
      bytes += tok.token_bytes(id);
    }
    CHECK(streamed == text);
    CHECK(bytes == static_cast<int64_t>(text.size()));
  }
  // Known words compress: fewer tokens than bytes for in-domain text.
  CHECK(tok.encode(corpus).size() < corpus.size());
}

}  // namespace

TEST_CASE("tokenizer: bpe round-trips any UTF-8 text") {
  TempDir dir;
  Tokenizer tok = train_small(dir, TokenizerKind::bpe, 360, "bpe.model");
  CHECK(tok.vocab_size() == 360);
  check_round_trips(tok);
  // Newline and digits are single tokens (byte fallback / split_digits).
  CHECK(tok.encode("\n").size() == 1);
  CHECK(tok.encode("12345").size() == 5);
}

TEST_CASE("tokenizer: unigram round-trips any UTF-8 text") {
  TempDir dir;
  Tokenizer tok = train_small(dir, TokenizerKind::unigram, 340, "unigram.model");
  CHECK(tok.vocab_size() == 340);
  check_round_trips(tok);
}

TEST_CASE("tokenizer: character model round-trips, one token per seen character") {
  TempDir dir;
  Tokenizer tok = train_small(dir, TokenizerKind::character, 1000, "char.model");
  // 3 control + 256 bytes + the corpus' distinct characters (well under 1000).
  CHECK(tok.vocab_size() > 259);
  CHECK(tok.vocab_size() < 320);
  check_round_trips(tok);
  CHECK(tok.encode("the king").size() == 8);
  CHECK(tok.encode("café").size() == 4);  // é was in the corpus: one token, not two bytes
  CHECK(tok.encode("a\nb").size() == 3);  // newline survives as one token
  std::vector<int32_t> nl = tok.encode("\n");
  REQUIRE(nl.size() == 1);
  CHECK(tok.decode_token(nl[0]) == "\n");
}

TEST_CASE("tokenizer: EOS is </s>, id 2, a control token no text encodes to and that decodes to nothing") {
  TempDir dir;
  for (TokenizerKind kind : {TokenizerKind::bpe, TokenizerKind::character}) {
    Tokenizer tok = train_small(dir, kind, 360, "eos.model");
    CHECK(tok.eos_id() == 2);
    CHECK(tok.decode_token(tok.eos_id()).empty());
    CHECK(tok.token_bytes(tok.eos_id()) == 0);
    for (const std::string& text : {std::string("</s>"), test::corpus_make(20, 3), std::string("a</s>b")})
      for (int32_t id : tok.encode(text)) CHECK(id != tok.eos_id());
  }
}

TEST_CASE("tokenizer: load checks the file, checksum and model bytes identify it") {
  TempDir dir;
  Tokenizer a = train_small(dir, TokenizerKind::bpe, 340, "a.model");
  Tokenizer a2 = Tokenizer::load(dir.file("a.model"));
  CHECK(a.fnv1a64() == a2.fnv1a64());
  CHECK(a.model_bytes() == file_read_all(dir.file("a.model")));
  CHECK(a.fnv1a64() == fnv1a64(a.model_bytes()));
  Tokenizer b = train_small(dir, TokenizerKind::bpe, 350, "b.model");
  CHECK(a.fnv1a64() != b.fnv1a64());
  Tokenizer c = Tokenizer::from_bytes(a.model_bytes());
  CHECK(c.encode("the LORD said") == a.encode("the LORD said"));
  // No temporary files are left behind by the atomic write.
  int files = 0;
  for (auto& entry : std::filesystem::directory_iterator(dir.file(""))) files += entry.is_regular_file();
  CHECK(files == 3);  // corpus.txt, a.model, b.model

  CHECK_THROWS_WITH_AS(Tokenizer::load(dir.file("missing.model")), doctest::Contains("missing.model"), Error);
  std::string garbage = dir.write("garbage.model", "this is not a protobuf");
  CHECK_THROWS_WITH_AS(Tokenizer::load(garbage), doctest::Contains("not a valid SentencePiece model"), Error);
  CHECK_THROWS_AS(a.decode_token(a.vocab_size()), Error);
  CHECK_THROWS_AS(a.decode_token(-1), Error);
}

TEST_CASE("tokenizer: training is deterministic") {
  TempDir dir;
  Tokenizer a = train_small(dir, TokenizerKind::unigram, 340, "a.model");
  Tokenizer b = train_small(dir, TokenizerKind::unigram, 340, "b.model");
  CHECK(a.fnv1a64() == b.fnv1a64());
}

TEST_CASE("tokenizer: training errors name the problem and the fix") {
  TempDir dir;
  TokenizerTrainOptions o;
  o.model_path = dir.file("m.model");
  o.vocab_size = 340;

  o.corpus = dir.file("nope.txt");
  CHECK_THROWS_WITH_AS(tokenizer_train(o), doctest::Contains("nope.txt does not exist"), Error);
  o.corpus = dir.write("empty.txt", "");
  CHECK_THROWS_WITH_AS(tokenizer_train(o), doctest::Contains("is empty"), Error);
  o.corpus = dir.write("blank.txt", "\n\n\n");
  CHECK_THROWS_WITH_AS(tokenizer_train(o), doctest::Contains("no non-empty lines"), Error);

  o.corpus = dir.write("corpus.txt", test::corpus_make(100));
  o.vocab_size = 100;
  CHECK_THROWS_WITH_AS(tokenizer_train(o), doctest::Contains("set it >= 260"), Error);
  o.vocab_size = 5000;
  CHECK_THROWS_WITH_AS(tokenizer_train(o), doctest::Contains("too large for corpus"), Error);
  o.kind = TokenizerKind::unigram;
  CHECK_THROWS_WITH_AS(tokenizer_train(o), doctest::Contains("set tokenizer.vocab_size <="), Error);
  CHECK_FALSE(std::filesystem::exists(o.model_path));  // nothing written on failure
}

TEST_CASE("tokenizer: lines longer than SentencePiece's limit still train") {
  TempDir dir;
  // One 40 KB line without newlines, plus a 20 KB line without spaces (cut at UTF-8 boundaries).
  std::string words = test::corpus_make(400);
  for (char& c : words)
    if (c == '\n') c = ' ';
  std::string no_spaces;
  while (no_spaces.size() < 20000) no_spaces += "éàü中";
  TokenizerTrainOptions o;
  o.corpus = dir.write("long.txt", words + "\n" + no_spaces + "\n");
  o.model_path = dir.file("long.model");
  o.vocab_size = 340;
  tokenizer_train(o);
  Tokenizer tok = Tokenizer::load(o.model_path);
  CHECK(tok.decode(tok.encode(words)) == words);
  // The characters of the space-free line made it into the vocabulary: one token each.
  CHECK(tok.encode("中").size() == 1);
}

TEST_CASE("tokenizer: a corpus that is not text is refused, leaving no model and an old one untouched") {
  TempDir dir;
  TokenizerTrainOptions o;
  o.model_path = dir.file("m.model");
  o.vocab_size = 340;
  std::string random;  // what `head -c 1M /dev/urandom` gives, deterministically
  CounterRng rng(5);
  for (int i = 0; i < 200000; ++i) random += static_cast<char>(rng.below(256));
  o.corpus = dir.write("random.bin", random);
  size_t first_bad = 0;
  while (static_cast<unsigned char>(random[first_bad]) < 0x80 && random[first_bad] != '\0') ++first_bad;
  const std::string named = "tokenizer corpus " + o.corpus + " is not";
  const std::string where = fmt::format("at byte offset {}", first_bad);
  CHECK_THROWS_WITH_AS(tokenizer_train(o), doctest::Contains(named.c_str()), Error);
  CHECK_THROWS_WITH_AS(tokenizer_train(o), doctest::Contains(where.c_str()), Error);
  CHECK_FALSE(std::filesystem::exists(o.model_path));

  // Text with a NUL deep inside (past the first 1 MiB block).
  std::string text = test::corpus_make(40000);
  REQUIRE(text.size() > (1u << 20) + 10);
  text[(1 << 20) + 5] = '\0';
  o.corpus = dir.write("nul.txt", text);
  CHECK_THROWS_WITH_AS(tokenizer_train(o),
                       doctest::Contains(fmt::format("NUL byte at byte offset {}", (1 << 20) + 5).c_str()), Error);

  // A temporary left by a killed training (its pid is gone) is removed by the next one.
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  REQUIRE(child > 0);
  ::waitpid(child, nullptr, 0);
  const std::string stale = dir.write("m.model.tmp." + std::to_string(child), "half a model");
  // A failed re-train keeps the model that was there, byte for byte.
  o.corpus = dir.write("good.txt", test::corpus_make(200));
  tokenizer_train(o);
  CHECK_FALSE(std::filesystem::exists(stale));
  const std::string before = file_read_all(o.model_path);
  o.corpus = dir.write("latin1.txt", "plain line\ncaf\xE9 au lait\n");
  CHECK_THROWS_WITH_AS(tokenizer_train(o), doctest::Contains("at byte offset 14 (byte 0xe9)"), Error);
  CHECK(file_read_all(o.model_path) == before);
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.path()))
    files += e.path().string().find(".tmp.") != std::string::npos;
  CHECK(files == 0);
}

TEST_CASE("tokenizer: too little text for the vocab is refused with the largest vocab it allows") {
  TempDir dir;
  TokenizerTrainOptions o;
  o.model_path = dir.file("m.model");
  o.corpus = dir.write("tiny.txt", "hello world\n");
  for (TokenizerKind kind : {TokenizerKind::bpe, TokenizerKind::unigram}) {
    o.kind = kind;
    o.vocab_size = 1024;
    CHECK_THROWS_WITH_AS(tokenizer_train(o), doctest::Contains("set tokenizer.vocab_size <="), Error);
  }
  CHECK_FALSE(std::filesystem::exists(o.model_path));
}

TEST_CASE("tokenizer: a model SentencePiece throws on is refused with a message, not a crash") {
  // Found by fuzzing (tests/fuzz/corpus/tokenizer/crash-empty-piece-throws-in-darts): a unigram
  // model with a zero-length piece makes SentencePiece 0.1.97's trie builder throw
  // Darts::Details::Exception out of LoadFromSerializedProto.
  const std::string model("\x0a\x0e\x0a\x05\x3c\x0b\x6e\x6b\x3e\x15\x00\x0b\x01\x00\x18\x00\x18\x02\x0a\x0c\x0a\x03\x2f"
                          "\x73\x3e\x15\x00\x00\x00\x00\x18\x02\x0a\x0c\x0a\x03\x00\x28\x3e\x15\x00\x00\x00\x00\x18\x0a",
                          46);
  CHECK_THROWS_WITH_AS(Tokenizer::from_bytes(model, "bad.model"),
                       doctest::Contains("tokenizer model bad.model (46 bytes) is not a valid SentencePiece model: "),
                       Error);
  CHECK_THROWS_WITH_AS(Tokenizer::from_bytes(model, "bad.model"), doctest::Contains("zero-length key"), Error);
}
