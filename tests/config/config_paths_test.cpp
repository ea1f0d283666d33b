// The paths a config derives when left "": the tokenizer follows its corpus as the token file does.
#include <doctest/doctest.h>

#include "config/config.h"
#include "config/config_load.h"

using namespace rfa;

TEST_CASE("config paths: tokenizer.path \"\" is next to the corpus, named after it, the kind and the vocab") {
  Config c;
  CHECK(c.tokenizer.path.empty());
  CHECK(config_tokenizer_path(c) == "data/kjv-bpe2048.model");  // the file the default always named
  c.data.corpus = "mytext.txt";  // the newcomer's corpus once got data/kjv-bpe2048.model
  CHECK(config_tokenizer_path(c) == "mytext-bpe2048.model");
  CHECK(config_tokens_path(c.data) == "mytext.txt.tokens");
  c.data.corpus = "/srv/texts/novel.v2.txt";
  c.tokenizer.kind = TokenizerKind::character;
  c.tokenizer.vocab_size = 384;
  CHECK(config_tokenizer_path(c) == "/srv/texts/novel.v2-char384.model");
  c.tokenizer.corpus = "other/tok.txt";  // the tokenizer's own corpus, when given
  CHECK(config_tokenizer_path(c) == "other/tok-char384.model");
  c.tokenizer.path = "models/mine.model";  // a path that is set is kept
  CHECK(config_tokenizer_path(c) == "models/mine.model");
  // "" is allowed now, from a file and from --set.
  CHECK(config_load("", {"tokenizer.path=", "data.corpus=a/b.txt"}).tokenizer.path.empty());
}

TEST_CASE("config paths: a directory's tokenizer and token file go beside it, a list's beside its first path") {
  Config c;
  c.data.corpus = "data/books";  // a directory: beside it, never inside, where it would join the corpus
  CHECK(config_tokenizer_path(c) == "data/books-bpe2048.model");
  CHECK(config_tokens_path(c.data) == "data/books.tokens");
  c.data.corpus = "data/books/";  // the same directory, spelt with its '/'
  CHECK(config_tokenizer_path(c) == "data/books-bpe2048.model");
  CHECK(config_tokens_path(c.data) == "data/books.tokens");
  c.data.corpus = "data/chat.jsonl";  // a JSON Lines file is a file like any other
  CHECK(config_tokenizer_path(c) == "data/chat-bpe2048.model");
  // A list: beside its first path, named after it and how many follow it.
  c.data.corpus = "data/a.txt,more/b.txt,more/";
  CHECK(config_tokenizer_path(c) == "data/a+2-bpe2048.model");
  c.data.corpus = "data/books/,data/a.txt";
  CHECK(config_tokenizer_path(c) == "data/books+1-bpe2048.model");
  c.tokenizer.corpus = "tok/one.txt,tok/two.txt";  // tokenizer.corpus names files as data.corpus does
  CHECK(config_tokenizer_path(c) == "tok/one+1-bpe2048.model");
  CHECK(config_corpus_paths("a,b/,c") == std::vector<std::string>{"a", "b/", "c"});
  CHECK(config_corpus_paths("a,,") == std::vector<std::string>{"a", "", ""});  // corpus_files refuses the empty ones
}
