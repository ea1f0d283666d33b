// model.safetensors as an outside tool sees it: a checkpoint written by
// checkpoint_save is read back with a minimal parser that uses none of our
// code (8-byte little-endian header length, the header JSON by plain string
// search, offsets into the data section) and every tensor is compared with
// what the model holds, byte for byte. This is what the README's numpy
// snippet does.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "config/config_enums.h"
#include "model/model_io.h"
#include "model/model_spec.h"
#include "support/temp_dir.h"
#include "support/tiny_model.h"

using namespace rfa;

namespace {

struct RawFile {
  std::string header;          // the JSON text
  std::vector<char> data;      // the data section
};

RawFile raw_read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() >= 8);
  uint64_t n = 0;
  for (int k = 0; k < 8; ++k) n |= uint64_t(static_cast<unsigned char>(bytes[size_t(k)])) << (8 * k);
  REQUIRE(8 + n <= bytes.size());
  RawFile f;
  f.header.assign(bytes.begin() + 8, bytes.begin() + 8 + static_cast<long>(n));
  f.data.assign(bytes.begin() + 8 + static_cast<long>(n), bytes.end());
  return f;
}

struct RawTensor {
  std::string dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

// The header entry "name": {"dtype": ..., "shape": [...], "data_offsets": [b, e]},
// found by string search, tolerant of spaces after ':' and ','.
RawTensor raw_tensor(const RawFile& f, const std::string& name) {
  size_t at = f.header.find("\"" + name + "\"");
  REQUIRE_MESSAGE(at != std::string::npos, "no tensor ", name);
  const std::string entry = f.header.substr(at, f.header.find('}', at) - at);
  auto after = [&](const std::string& key) {
    size_t k = entry.find("\"" + key + "\"");
    REQUIRE(k != std::string::npos);
    k = entry.find_first_not_of(" :", k + key.size() + 2);
    return k;
  };
  RawTensor t;
  size_t d = after("dtype") + 1;
  t.dtype = entry.substr(d, entry.find('"', d) - d);
  size_t s = after("shape") + 1;
  const std::string dims = entry.substr(s, entry.find(']', s) - s);
  for (const char* p = dims.c_str(); *p;) {
    char* next = nullptr;
    t.shape.push_back(std::strtoll(p, &next, 10));
    p = next;
    while (*p == ',' || *p == ' ') ++p;
  }
  size_t o = after("data_offsets") + 1;
  unsigned long long b = 0, e = 0;
  REQUIRE(std::sscanf(entry.c_str() + o, "%llu , %llu", &b, &e) == 2);
  t.begin = b;
  t.end = e;
  return t;
}

}  // namespace

TEST_CASE("model.safetensors: a minimal independent parser finds every tensor the model holds") {
  for (AttentionKind kind : {AttentionKind::softmax, AttentionKind::rfa_gate}) {
    CAPTURE(enum_name(kind));
    const ModelSpec spec = test::tiny_spec(kind, {.vocab = 20});
    Model<float> model(spec);
    model_init(model, 7);
    std::vector<float> adam(static_cast<size_t>(model.param_size()), 0.0f);

    test::TempDir dir;
    CheckpointContents contents;
    contents.model = model_tensor_refs(model);
    contents.optimizer = optimizer_tensor_refs(model, adam.data(), adam.data());
    contents.state.step = 1;
    const std::string checkpoint = checkpoint_save(dir / "checkpoints", contents, CheckpointConfig{});
    const RawFile f = raw_read(checkpoint + "/model.safetensors");
    CHECK(f.header.find("\"__metadata__\"") != std::string::npos);

    int64_t bytes = 0;
    for (const ParamEntry& e : model.table.entries()) {
      CAPTURE(e.name);
      const RawTensor t = raw_tensor(f, e.name);
      CHECK(t.dtype == "F32");
      CHECK(t.shape == e.shape);
      REQUIRE(t.end - t.begin == uint64_t(e.numel) * 4);
      REQUIRE(t.end <= f.data.size());
      CHECK(std::memcmp(f.data.data() + t.begin, model.params() + e.offset, t.end - t.begin) == 0);
      bytes += e.numel * 4;
    }
    // Named rows as the README documents them.
    CHECK(raw_tensor(f, "tok_embedding").shape == std::vector<int64_t>{20, 16});
    CHECK(raw_tensor(f, "layers.1.attn.wq").shape == std::vector<int64_t>{16, 16});
    if (spec.attention.kind != AttentionKind::softmax) {
      for (int l = 0; l < spec.L; ++l) {
        const RawTensor t = raw_tensor(f, "layers." + std::to_string(l) + ".attn.random");
        CHECK(t.shape == std::vector<int64_t>{spec.H, spec.attention.num_features, spec.Dh});
        const int64_t n = int64_t(spec.H) * spec.attention.num_features * spec.Dh;
        REQUIRE(t.end - t.begin == uint64_t(n) * 4);
        CHECK(std::memcmp(f.data.data() + t.begin, model.random_fixed() + l * n, t.end - t.begin) == 0);
        bytes += n * 4;
      }
    } else {
      CHECK(f.header.find(".attn.random") == std::string::npos);
    }
    // Nothing else in the data section: the tensors above tile it.
    CHECK(int64_t(f.data.size()) == bytes);
  }
}
