// Version 3 token files: documents of JSON Lines corpora and instruction examples, and
// several text files, each document's ids what the format says, the table checked on open.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/corpus_source.h"
#include "data/data_setup.h"
#include "data/prompt_template.h"
#include "data/token_file_documents.h"
#include "data/token_file_format.h"
#include "io/file_util.h"
#include "support/corpus.h"
#include "support/temp_dir.h"
#include "support/test_files.h"
#include "support/trained_tokenizer.h"

using namespace rfa;
using test::TempDir;

namespace {

Tokenizer char_tokenizer(const TempDir& dir) {
  return test::tokenizer_trained(dir, dir.write("train.txt", test::corpus_make(300)), "char.model",
                                 TokenizerKind::character, 1000);
}

std::vector<int32_t> ids_of(const TokenSplit& all, int64_t begin, int64_t end) {
  std::vector<int32_t> v(static_cast<size_t>(end - begin));
  all.copy(begin, end - begin, v.data());
  return v;
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

void patch(const std::string& path, int64_t offset, const void* bytes, size_t n) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(offset);
  f.write(static_cast<const char*>(bytes), static_cast<std::streamsize>(n));
}

}  // namespace

TEST_CASE("documents: jsonl documents are their text then EOS, the validation split whole documents") {
  TempDir dir;
  const Tokenizer tok = char_tokenizer(dir);
  const std::vector<std::string> texts = {"the LORD said", "and the king\nsaid unto him", "café über naïve", "x"};
  const std::string corpus = dir.write("docs.jsonl",
                                       "{\"text\": \"the LORD said\"}\n\n"
                                       "{\"text\": \"and the king\\nsaid unto him\", \"id\": 7}\n"
                                       "  \n{\"meta\": {\"a\": [1]}, \"text\": \"café über naïve\"}\n"
                                       "{\"text\": \"x\"}");  // no final newline
  const TokenFileStats st = token_file_prepare_documents(corpus_source(corpus, DataFormat::jsonl, {}), tok,
                                                         dir / "docs.tokens", 0.34);
  CHECK(st.documents == 4);
  CHECK(st.val_documents == 1);  // max(1, floor(4 x 0.34))
  TokenFile f = TokenFile::open(dir / "docs.tokens", tok);
  CHECK(f.header().version == kTokenFileDocumentsVersion);
  CHECK(f.header().format == DataFormat::jsonl);
  CHECK(f.header().eos_id == tok.eos_id());
  const DocumentTable docs = f.documents();
  REQUIRE(docs.size() == 4);
  int64_t train_bytes = 0;
  for (int64_t d = 0; d < 4; ++d) {
    CAPTURE(d);
    std::vector<int32_t> want = tok.encode(texts[static_cast<size_t>(d)]);
    want.push_back(tok.eos_id());
    CHECK(ids_of(f.all(), docs.start(d), docs.end(d)) == want);
    CHECK(docs.response_start(d) == docs.start(d));  // everything is trained on
    if (d < 3) train_bytes += static_cast<int64_t>(texts[static_cast<size_t>(d)].size());
  }
  CHECK(f.header().split == docs.start(3));
  CHECK(f.header().split_document == 3);
  CHECK(f.val().size() == docs.end(3) - docs.start(3));
  CHECK(f.header().train_bytes == train_bytes);
  CHECK(f.header().val_bytes == 1);
  CHECK(docs.find(0) == 0);
  CHECK(docs.find(docs.end(0) - 1) == 0);
  CHECK(docs.find(docs.end(0)) == 1);
  CHECK(docs.find(f.header().tokens) == 4);
}

TEST_CASE("documents: an instruction example is encode(prompt) ++ encode(response) ++ [EOS], the boundary between") {
  TempDir dir;
  const Tokenizer tok = char_tokenizer(dir);
  const std::string alpaca = dir.write("a.jsonl",
                                       "{\"instruction\": \"Say the word.\", \"output\": \"king\"}\n"
                                       "{\"instruction\": \"Add them.\", \"input\": \"2 and 3\", \"output\": \"5\"}\n");
  for (PromptTemplate t : {PromptTemplate::alpaca, PromptTemplate::alpaca_short}) {
    token_file_prepare_documents(corpus_source(alpaca, DataFormat::alpaca, t), tok, dir / "a.tokens", 0.5);
    TokenFile f = TokenFile::open(dir / "a.tokens", tok);
    CHECK(f.header().format == DataFormat::alpaca);
    CHECK(f.header().prompt_template == 1 + static_cast<uint32_t>(t));
    const DocumentTable docs = f.documents();
    const std::vector<int32_t> p0 = tok.encode(prompt_render(t, "Say the word.", ""));
    const std::vector<int32_t> p1 = tok.encode(prompt_render(t, "Add them.", "2 and 3"));
    CHECK(ids_of(f.all(), docs.start(0), docs.end(0)) == concat(concat(p0, tok.encode("king")), {tok.eos_id()}));
    CHECK(ids_of(f.all(), docs.start(1), docs.end(1)) == concat(concat(p1, tok.encode("5")), {tok.eos_id()}));
    CHECK(docs.response_start(0) - docs.start(0) == static_cast<int64_t>(p0.size()));
    CHECK(docs.response_start(1) - docs.start(1) == static_cast<int64_t>(p1.size()));
  }
  const std::string pc = dir.write("pc.jsonl", "{\"prompt\": \"Q: 2+2?\\nA:\", \"completion\": \" 4\"}\n"
                                               "{\"prompt\": \"\", \"completion\": \"free text\"}\n");
  token_file_prepare_documents(corpus_source(pc, DataFormat::prompt_completion, {}), tok, dir / "pc.tokens", 0.5);
  TokenFile f = TokenFile::open(dir / "pc.tokens", tok);
  const DocumentTable docs = f.documents();
  CHECK(ids_of(f.all(), 0, docs.end(0)) == concat(concat(tok.encode("Q: 2+2?\nA:"), tok.encode(" 4")), {2}));
  CHECK(docs.response_start(0) == static_cast<int64_t>(tok.encode("Q: 2+2?\nA:").size()));
  CHECK(docs.response_start(1) == docs.start(1));  // an empty prompt
}

TEST_CASE("documents: several text files are joined by EOS; a directory gives its files in path order") {
  TempDir dir;
  const Tokenizer tok = char_tokenizer(dir);
  std::filesystem::create_directories(dir / "c/sub");
  std::filesystem::create_directories(dir / "c/.git");
  dir.write("c/b.txt", "second file\n");
  dir.write("c/a.txt", "first file");
  dir.write("c/sub/c.txt", "third\n");
  dir.write("c/.hidden", "not read");
  dir.write("c/.git/x", "not read");
  const std::vector<std::string> files = corpus_files(dir / "c");
  CHECK(files == std::vector<std::string>{dir / "c/a.txt", dir / "c/b.txt", dir / "c/sub/c.txt"});
  CHECK(corpus_files(dir / "c/sub/c.txt," + (dir / "c/a.txt")) ==
        std::vector<std::string>{dir / "c/sub/c.txt", dir / "c/a.txt"});
  const TokenFileStats st =
      token_file_prepare_documents(corpus_source(dir / "c", DataFormat::text, {}), tok, dir / "t.tokens", 0.2, 16);
  TokenFile f = TokenFile::open(dir / "t.tokens", tok);
  const std::vector<int32_t> want = concat(
      concat(concat(concat(tok.encode("first file"), {2}), tok.encode("second file\n")), {2}), tok.encode("third\n"));
  CHECK(f.all().to_vector() == want);
  CHECK(f.documents().size() == 3);
  CHECK(st.corpus_bytes == 10 + 12 + 6);
  const int64_t N = static_cast<int64_t>(want.size());
  CHECK(f.header().split == N - static_cast<int64_t>(static_cast<double>(N) * 0.2));  // by tokens, as one text
  CHECK_THROWS_WITH_AS(corpus_files(dir / "c/none.txt"), doctest::Contains("none.txt' does not exist"), Error);
  std::filesystem::create_directories(dir / "empty");
  CHECK_THROWS_WITH_AS(corpus_files(dir / "empty"), doctest::Contains("holds no files"), Error);
  CHECK_THROWS_WITH_AS(corpus_files(dir / "c/a.txt,"), doctest::Contains("has an empty path"), Error);
}

TEST_CASE("documents: the block size changes nothing in the file") {
  TempDir dir;
  const Tokenizer tok = char_tokenizer(dir);
  static const char* words[] = {"the", "king", "café", "said", "unto", "über", "land", "of"};
  std::string jsonl;
  for (int i = 0; i < 300; ++i) {
    std::string output;
    for (int w = 0; w < 3 + i % 7; ++w) output += std::string(w ? " " : "") + words[(i * 7 + w) % 8];
    jsonl += "{\"instruction\": \"Line " + std::to_string(i) + "\", \"output\": \"" + output + "\"}\n";
  }
  const std::string path = dir.write("many.jsonl", jsonl);
  const CorpusSource s = corpus_source(path, DataFormat::alpaca, PromptTemplate::alpaca);
  token_file_prepare_documents(s, tok, dir / "small.tokens", 0.1, 64);
  token_file_prepare_documents(s, tok, dir / "big.tokens", 0.1);
  CHECK(file_read_all(dir / "small.tokens") == file_read_all(dir / "big.tokens"));
  CHECK(TokenFile::open(dir / "big.tokens", tok).documents().size() == 300);
}

TEST_CASE("documents: a line that is not a document is refused naming the file and line; nothing is left") {
  TempDir dir;
  const Tokenizer tok = char_tokenizer(dir);
  auto error = [&](const std::string& text, DataFormat format, double fraction = 0.1) {
    const std::string path = dir.write("bad.jsonl", text);
    return test::error_of([&] {
      token_file_prepare_documents(corpus_source(path, format, {}), tok, dir / "bad.tokens", fraction);
    });
  };
  auto has = [](const std::string& message, const std::string& part) {
    INFO(message);
    return message.find(part) != std::string::npos;
  };
  const std::string ok = "{\"text\": \"a\"}\n";
  CHECK(has(error(ok + "{\"text\": \"b\"\n", DataFormat::jsonl), "bad.jsonl:2"));
  CHECK(has(error(ok + "[1, 2]\n", DataFormat::jsonl), "bad.jsonl:2: not a JSON object; expected {\"text\""));
  CHECK(has(error(ok + "{\"txt\": \"b\"}\n", DataFormat::jsonl), "bad.jsonl:2: no \"text\" field"));
  CHECK(has(error(ok + "{\"text\": 3}\n", DataFormat::jsonl), "\"text\" is not a string"));
  CHECK(has(error(ok + "{\"text\": \"a\\u0000b\"}\n", DataFormat::jsonl), "holds a NUL character"));
  CHECK(has(error("{\"instruction\": \"i\", \"input\": \"x\"}\n", DataFormat::alpaca), "no \"output\" field"));
  CHECK(has(error("{\"prompt\": \"p\"}\n", DataFormat::prompt_completion), "no \"completion\" field"));
  CHECK(has(error("\n  \n\n", DataFormat::jsonl), "holds no documents"));
  CHECK(has(error(ok, DataFormat::jsonl), "holds 1 document; a validation split of whole documents needs at least 2"));
  CHECK(has(error(ok + std::string("{\"text\": \"\xff\"}\n"), DataFormat::jsonl), "bad.jsonl"));
  CHECK(!std::filesystem::exists(dir / "bad.tokens"));
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    CHECK(e.path().filename().string().find(".tmp") == std::string::npos);  // no temporary left
}

TEST_CASE("documents: a damaged table or a document without its EOS is refused on open") {
  TempDir dir;
  const Tokenizer tok = char_tokenizer(dir);
  const std::string corpus = dir.write("d.jsonl", "{\"text\": \"one\"}\n{\"text\": \"two two\"}\n{\"text\": \"3\"}\n");
  token_file_prepare_documents(corpus_source(corpus, DataFormat::jsonl, {}), tok, dir / "good.tokens", 0.34);
  const std::string good = file_read_all(dir / "good.tokens");
  const TokenFileHeader h = TokenFile::open(dir / "good.tokens", tok).header();
  const int64_t table = token_file_table_offset(h);
  auto damaged = [&](int64_t offset, int64_t value, int width) {
    const std::string path = dir.write("bad.tokens", good);
    patch(path, offset, &value, static_cast<size_t>(width));
    return test::error_of([&] { TokenFile::open(path, tok); });
  };
  CHECK(damaged(table + 16, 0, 8).find("document 0 of 3 spans tokens [0, 0)") != std::string::npos);  // a start moved
  CHECK(damaged(table + 16 + 8, 0, 8).find("has its response at token 0") != std::string::npos);
  CHECK(damaged(kTokenFileDocumentsHeaderBytes + 2 * 3, 5, 2).find("ends with token 5, not the end-of-sequence") !=
        std::string::npos);  // "one" then EOS: token 3 is the EOS
  CHECK(damaged(table + 16 * 3, 0, 8).find("truncated or corrupt") != std::string::npos);  // 8 bytes past the table
}

TEST_CASE("documents: a token file of another format than data.format is refused") {
  TempDir dir;
  const Tokenizer tok = char_tokenizer(dir);
  const std::string text = dir.write("t.txt", test::corpus_make(20));
  token_file_prepare(text, tok, dir / "one.tokens", 0.1);
  const std::string ex = dir.write("e.jsonl", "{\"instruction\": \"a\", \"output\": \"b\"}\n{\"instruction\": "
                                              "\"c\", \"output\": \"d\"}\n");
  token_file_prepare_documents(corpus_source(ex, DataFormat::alpaca, PromptTemplate::alpaca), tok, dir / "ex.tokens",
                               0.5);
  DataConfig d;
  d.format = DataFormat::alpaca;
  const TokenFile one = TokenFile::open(dir / "one.tokens", tok), examples = TokenFile::open(dir / "ex.tokens", tok);
  CHECK_THROWS_WITH_AS(token_file_format_require(one, d),
                       doctest::Contains("holds one text (version 2) but data.format is alpaca"), Error);
  CHECK_NOTHROW(token_file_format_require(examples, d));
  d.prompt_template = PromptTemplate::alpaca_short;
  CHECK_THROWS_WITH_AS(token_file_format_require(examples, d),
                       doctest::Contains("rendered with template alpaca but data.template is alpaca_short"), Error);
  d.format = DataFormat::jsonl;
  CHECK_THROWS_WITH_AS(token_file_format_require(examples, d),
                       doctest::Contains("holds alpaca documents but data.format is jsonl"), Error);
  d.format = DataFormat::text;
  CHECK_NOTHROW(token_file_format_require(one, d));
}
