#include <doctest/doctest.h>

#include <algorithm>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "io/file_io.h"
#include "checkpoint/safetensors.h"
#include "support/temp_dir.h"
#include "core/error.h"
#include "support/gradcheck.h"

using namespace rfa;

namespace {

// A small file's worth of tensors of several dtypes, including a scalar and an empty one.
struct Sample {
  std::vector<float> w = test::random_vector<float>(24, 3);
  std::vector<double> d = {1.5, -2.25, 1e-300};
  std::vector<int32_t> i = {7, -8, 9, 2147483647};
  std::vector<uint8_t> u = {0, 255, 17};
  float scalar = 3.25f;
  std::vector<TensorRef> refs() const {
    return {{"layers.0.attn.wq", DType::F32, {4, 6}, w.data()},
            {"d", DType::F64, {3}, d.data()},
            {"ids", DType::I32, {2, 2}, i.data()},
            {"bytes", DType::U8, {3}, u.data()},
            {"scalar", DType::F32, {}, &scalar},
            {"empty", DType::F32, {0, 5}, nullptr}};
  }
};

bool same_file(const SafetensorsFile& a, const SafetensorsFile& b) {
  if (a.metadata != b.metadata || a.tensors.size() != b.tensors.size()) return false;
  for (size_t k = 0; k < a.tensors.size(); ++k) {
    const Tensor &x = a.tensors[k], &y = b.tensors[k];
    if (x.name != y.name || x.dtype != y.dtype || x.shape != y.shape || !std::ranges::equal(x.bytes, y.bytes)) return false;
  }
  return true;
}

// An independent reader for the test: finds a tensor's fields in the header by plain
// string search (no JSON library, none of our code) and returns its bytes.
struct MiniTensor {
  std::string dtype;
  std::vector<long long> shape;
  std::vector<uint8_t> bytes;
};
MiniTensor mini_read(const std::vector<uint8_t>& file, const std::string& name) {
  uint64_t n = 0;
  for (int k = 0; k < 8; ++k) n |= uint64_t(file[k]) << (8 * k);
  std::string header(file.begin() + 8, file.begin() + 8 + n);
  size_t at = header.find("\"" + name + "\":{");
  REQUIRE(at != std::string::npos);
  std::string entry = header.substr(at, header.find('}', at) - at);
  MiniTensor t;
  size_t dt = entry.find("\"dtype\":\"") + 9;
  t.dtype = entry.substr(dt, entry.find('"', dt) - dt);
  size_t sh = entry.find("\"shape\":[") + 9;
  std::string dims = entry.substr(sh, entry.find(']', sh) - sh);
  for (size_t p = 0; p < dims.size();) {
    size_t comma = dims.find(',', p);
    t.shape.push_back(std::stoll(dims.substr(p, comma - p)));
    p = comma == std::string::npos ? dims.size() : comma + 1;
  }
  unsigned long long begin = 0, end = 0;
  REQUIRE(std::sscanf(entry.c_str() + entry.find("\"data_offsets\":["), "\"data_offsets\":[%llu,%llu]", &begin,
                      &end) == 2);
  const uint8_t* data = file.data() + 8 + n;
  t.bytes.assign(data + begin, data + end);
  return t;
}

std::vector<uint8_t> sample_file(const test::TempDir& dir) {
  Sample s;
  safetensors_write(dir / "m.safetensors", s.refs(), {{"note", "hello \"world\""}});
  return file_read_bytes(dir / "m.safetensors");
}

}  // namespace

TEST_CASE("safetensors: write then read is bit-identical, metadata kept, header 8-aligned") {
  test::TempDir dir;
  Sample s;
  safetensors_write(dir / "m.safetensors", s.refs(), {{"note", "hello"}});
  SafetensorsFile f = safetensors_read(dir / "m.safetensors");
  REQUIRE(f.tensors.size() == 6);
  CHECK(f.metadata == std::map<std::string, std::string>{{"note", "hello"}});
  for (const TensorRef& ref : s.refs()) {
    const Tensor* t = f.find(ref.name);
    REQUIRE(t != nullptr);
    CHECK(t->dtype == ref.dtype);
    CHECK(t->shape == ref.shape);
    size_t bytes = shape_numel(ref.shape) * dtype_size(ref.dtype);
    REQUIRE(t->bytes.size() == bytes);
    CHECK((bytes == 0 || std::memcmp(t->bytes.data(), ref.data, bytes) == 0));
  }
  std::vector<float> w(24);
  tensor_copy_to(*f.find("layers.0.attn.wq"), w.data(), 24);
  CHECK(w == s.w);
  CHECK_THROWS_AS(tensor_copy_to(*f.find("d"), w.data(), 3), Error);
  // The tensors view the file's bytes, kept by the result: moved, the views stay in its storage.
  SafetensorsFile moved = std::move(f);
  const uint8_t *begin = moved.storage.data(), *end = begin + moved.storage.size();
  for (const Tensor& t : moved.tensors) CHECK((t.bytes.data() >= begin && t.bytes.data() + t.bytes.size() <= end));
  std::fill(w.begin(), w.end(), 0.0f);
  tensor_copy_to(*moved.find("layers.0.attn.wq"), w.data(), 24);
  CHECK(w == s.w);

  std::vector<uint8_t> raw = file_read_bytes(dir / "m.safetensors");
  uint64_t n = 0;
  for (int k = 0; k < 8; ++k) n |= uint64_t(raw[k]) << (8 * k);
  CHECK(n % 8 == 0);
}

TEST_CASE("safetensors: an independent minimal parser reads what the writer wrote") {
  test::TempDir dir;
  Sample s;
  std::vector<uint8_t> file = sample_file(dir);
  MiniTensor w = mini_read(file, "layers.0.attn.wq");
  CHECK(w.dtype == "F32");
  CHECK(w.shape == std::vector<long long>{4, 6});
  REQUIRE(w.bytes.size() == 24 * 4);
  CHECK(std::memcmp(w.bytes.data(), s.w.data(), w.bytes.size()) == 0);
  MiniTensor i = mini_read(file, "ids");
  CHECK(i.dtype == "I32");
  CHECK(std::memcmp(i.bytes.data(), s.i.data(), 16) == 0);
  MiniTensor sc = mini_read(file, "scalar");
  CHECK(sc.shape.empty());
  CHECK(sc.bytes.size() == 4);
}

TEST_CASE("safetensors: every truncation is rejected with an rfa::Error") {
  test::TempDir dir;
  std::vector<uint8_t> file = sample_file(dir);
  for (size_t len = 0; len < file.size(); ++len) {
    std::vector<uint8_t> cut(file.begin(), file.begin() + len);
    CAPTURE(len);
    CHECK_THROWS_AS(safetensors_parse(cut, "cut.safetensors"), Error);
  }
  std::vector<uint8_t> cut(file.begin(), file.end() - 1);
  CHECK_THROWS_WITH_AS(safetensors_parse(cut, "cut.safetensors"), doctest::Contains("truncated"), Error);
  CHECK_THROWS_WITH_AS(safetensors_parse({1, 2, 3}, "tiny"), doctest::Contains("tiny: truncated: 3 bytes"), Error);
}

TEST_CASE("safetensors: every flipped byte is rejected or harmless (whitespace padding)") {
  test::TempDir dir;
  std::vector<uint8_t> file = sample_file(dir);
  SafetensorsFile good = safetensors_parse(file, "good");
  int rejected = 0, harmless = 0;
  for (size_t pos = 0; pos < file.size(); ++pos) {
    for (uint8_t mask : {0x01, 0x02, 0x10, 0x80, 0xff}) {
      std::vector<uint8_t> bad = file;
      bad[pos] ^= mask;
      try {
        SafetensorsFile f = safetensors_parse(bad, "bad");
        // Only a flip that turns padding whitespace into other whitespace may pass.
        CAPTURE(pos);
        CHECK(same_file(f, good));
        ++harmless;
      } catch (const Error&) {
        ++rejected;
      }
    }
  }
  CHECK(rejected > 0);
  CHECK(harmless < 10);
  MESSAGE("flips rejected: " << rejected << ", harmless: " << harmless);
}

TEST_CASE("safetensors: specific corruptions give specific messages") {
  test::TempDir dir;
  std::vector<uint8_t> file = sample_file(dir);
  uint64_t n = 0;
  for (int k = 0; k < 8; ++k) n |= uint64_t(file[k]) << (8 * k);
  std::string header(file.begin() + 8, file.begin() + 8 + n);
  std::vector<uint8_t> payload(file.begin() + 8 + n, file.end());
  auto rebuild = [&](std::string h, std::vector<uint8_t> data) {
    std::string bytes(8, '\0');
    for (int k = 0; k < 8; ++k) bytes[k] = char(uint64_t(h.size()) >> (8 * k));
    bytes += h;
    bytes.append(data.begin(), data.end());
    return std::vector<uint8_t>(bytes.begin(), bytes.end());
  };
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string h = header;
    size_t at = h.find(from);
    REQUIRE(at != std::string::npos);
    return h.replace(at, from.size(), to);
  };

  SUBCASE("header length larger than the file") {
    std::vector<uint8_t> bad = file;
    bad[6] = 1;
    CHECK_THROWS_WITH_AS(safetensors_parse(bad, "f"), doctest::Contains("bad header length"), Error);
  }
  SUBCASE("malformed JSON") {
    CHECK_THROWS_WITH_AS(safetensors_parse(rebuild(replaced("{\"dtype\"", "{dtype"), payload), "f"),
                         doctest::Contains("malformed JSON"), Error);
  }
  SUBCASE("unknown dtype") {
    CHECK_THROWS_WITH_AS(safetensors_parse(rebuild(replaced("\"dtype\":\"I32\"", "\"dtype\":\"I33\""), payload), "f"),
                         doctest::Contains("tensor 'ids': unknown dtype \"I33\""), Error);
  }
  SUBCASE("shape disagrees with the byte count") {
    CHECK_THROWS_WITH_AS(safetensors_parse(rebuild(replaced("\"shape\":[4,6]", "\"shape\":[4,5]"), payload), "f"),
                         doctest::Contains("shape [4, 5] needs 80 bytes but data_offsets [0, 96] hold 96"), Error);
  }
  SUBCASE("dtype disagrees with the byte count") {
    CHECK_THROWS_WITH_AS(
        safetensors_parse(rebuild(replaced("\"dtype\":\"F64\"", "\"dtype\":\"F32\""), payload), "f"),
        doctest::Contains("tensor 'd': dtype F32 shape [3] needs 12 bytes"), Error);
  }
  SUBCASE("offsets past the end of the data") {
    std::vector<uint8_t> shorter(payload.begin(), payload.end() - 3);
    CHECK_THROWS_WITH_AS(safetensors_parse(rebuild(header, shorter), "f"), doctest::Contains("run past the end"),
                         Error);
  }
  SUBCASE("overlapping offsets") {
    // Shift "d" (F64 [3], bytes 96..120) back by 8 bytes onto the first tensor.
    std::string h = replaced("\"data_offsets\":[96,120]", "\"data_offsets\":[88,112]");
    CHECK_THROWS_WITH_AS(safetensors_parse(rebuild(h, payload), "f"), doctest::Contains("overlap"), Error);
  }
  SUBCASE("trailing bytes after the last tensor") {
    std::vector<uint8_t> longer = payload;
    longer.push_back(0);
    CHECK_THROWS_WITH_AS(safetensors_parse(rebuild(header, longer), "f"), doctest::Contains("trailing bytes"), Error);
  }
  SUBCASE("payload checksum names the tensor") {
    std::vector<uint8_t> bad = payload;
    bad[100] ^= 0x40;  // inside "d"
    CHECK_THROWS_WITH_AS(safetensors_parse(rebuild(header, bad), "f"),
                         doctest::Contains("tensor 'd' is corrupted: payload checksum"), Error);
  }
  SUBCASE("a table change with a consistent shape is caught by the table checksum") {
    // [4, 6] -> [6, 4] keeps the byte count: only the table checksum can see it.
    CHECK_THROWS_WITH_AS(safetensors_parse(rebuild(replaced("\"shape\":[4,6]", "\"shape\":[6,4]"), payload), "f"),
                         doctest::Contains("tensor table checksum"), Error);
  }
  SUBCASE("metadata edits are caught by the table checksum") {
    CHECK_THROWS_WITH_AS(safetensors_parse(rebuild(replaced("hello", "jello"), payload), "f"),
                         doctest::Contains("tensor table checksum"), Error);
  }
}

TEST_CASE("safetensors: validation names the tensor and both shapes") {
  test::TempDir dir;
  std::vector<float> w(8, 1.0f);
  safetensors_write(dir / "m.safetensors", {{"layers.2.attn.wq", DType::F32, {2, 4}, w.data()}});
  SafetensorsFile f = safetensors_read(dir / "m.safetensors");
  safetensors_validate(f, {{"layers.2.attn.wq", DType::F32, {2, 4}}}, "m");
  CHECK_THROWS_WITH_AS(safetensors_validate(f, {{"layers.2.attn.wq", DType::F32, {4, 2}}}, "m"),
                       doctest::Contains("tensor 'layers.2.attn.wq' is F32 [2, 4] in the checkpoint but the config "
                                         "expects F32 [4, 2]"),
                       Error);
  CHECK_THROWS_WITH_AS(safetensors_validate(f, {{"layers.2.attn.wq", DType::F64, {2, 4}}}, "m"),
                       doctest::Contains("expects F64 [2, 4]"), Error);
  CHECK_THROWS_WITH_AS(
      safetensors_validate(f, {{"layers.2.attn.wq", DType::F32, {2, 4}}, {"norm", DType::F32, {4}}}, "m"),
      doctest::Contains("tensor 'norm' is missing"), Error);
  CHECK_THROWS_WITH_AS(safetensors_validate(f, {}, "m"), doctest::Contains("unexpected tensor 'layers.2.attn.wq'"),
                       Error);
}

TEST_CASE("safetensors: writer rejects duplicate names and reserved metadata; reports unwritable paths") {
  test::TempDir dir;
  float x = 1;
  CHECK_THROWS_WITH_AS(safetensors_write(dir / "a", {{"x", DType::F32, {}, &x}, {"x", DType::F32, {}, &x}}),
                       doctest::Contains("'x' appears twice"), Error);
  CHECK_THROWS_AS(safetensors_write(dir / "a", {{"__metadata__", DType::F32, {}, &x}}), Error);
  CHECK_THROWS_AS(safetensors_write(dir / "a", {}, {{"rfa.checksum.x", "0"}}), Error);
  CHECK_THROWS_WITH_AS(safetensors_write(dir / "no/such/dir/a", {{"x", DType::F32, {}, &x}}),
                       doctest::Contains("no/such/dir/a': No such file or directory"), Error);
  CHECK_THROWS_WITH_AS(safetensors_read(dir / "missing"), doctest::Contains("missing': No such file"), Error);
}

namespace {

// Float tensors only, as a checkpoint holds: SafetensorsReader reads F32.
struct FloatSample {
  std::vector<float> a = test::random_vector<float>(40, 5), b = test::random_vector<float>(7, 6);
  float scalar = -1.5f;
  std::vector<TensorRef> refs() const {
    return {{"a", DType::F32, {5, 8}, a.data()}, {"b", DType::F32, {7}, b.data()},
            {"scalar", DType::F32, {}, &scalar}, {"empty", DType::F32, {0, 3}, nullptr}};
  }
  // Opens `path` and reads every tensor; true if all hold this sample's values.
  bool read_back(const std::string& path) const {
    const SafetensorsReader r(path);
    std::vector<float> ra(a.size()), rb(b.size());
    float rs = 0;
    r.read_f32("a", ra.data(), int64_t(ra.size()));
    r.read_f32("b", rb.data(), int64_t(rb.size()));
    r.read_f32("scalar", &rs, 1);
    r.read_f32("empty", nullptr, 0);
    return ra == a && rb == b && rs == scalar;
  }
};

}  // namespace

TEST_CASE("safetensors reader: tensors read straight into their destination; damage caught at open or at read") {
  test::TempDir dir;
  FloatSample s;
  const std::string path = dir / "f.safetensors";
  safetensors_write(path, s.refs(), {{"rfa.step", "3"}});
  const std::vector<uint8_t> file = file_read_bytes(path);

  const SafetensorsReader r(path);
  CHECK(r.tensors.size() == 4);
  CHECK(r.metadata == std::map<std::string, std::string>{{"rfa.step", "3"}});
  REQUIRE(r.find("a") != nullptr);
  CHECK(r.find("a")->shape == std::vector<int64_t>{5, 8});
  CHECK(r.find("nope") == nullptr);
  CHECK(s.read_back(path));
  std::vector<float> into(40);
  CHECK_THROWS_WITH_AS(r.read_f32("a", into.data(), 39), doctest::Contains("cannot read it into 39 floats"), Error);
  CHECK_THROWS_WITH_AS(r.read_f32("nope", into.data(), 1), doctest::Contains("no tensor 'nope'"), Error);

  SUBCASE("a file removed after it was opened still reads (a trainer pruning the checkpoint)") {
    std::remove(path.c_str());
    std::vector<float> ra(s.a.size());
    r.read_f32("a", ra.data(), int64_t(ra.size()));
    CHECK(ra == s.a);
  }
  SUBCASE("every truncation is refused when the file is opened") {
    for (size_t len = 0; len < file.size(); ++len) {
      CAPTURE(len);
      file_write_durable(dir / "cut.safetensors", std::string(file.begin(), file.begin() + long(len)));
      CHECK_THROWS_AS(SafetensorsReader(dir / "cut.safetensors"), Error);
    }
  }
  SUBCASE("every flipped byte is refused at open or at read, or harmless (whitespace padding)") {
    int rejected = 0, harmless = 0;
    for (size_t pos = 0; pos < file.size(); ++pos) {
      std::vector<uint8_t> bad = file;
      bad[pos] ^= 0x01;
      file_write_durable(dir / "bad.safetensors", std::string(bad.begin(), bad.end()));
      try {
        const bool same = s.read_back(dir / "bad.safetensors");
        CAPTURE(pos);
        CHECK(same);
        ++harmless;
      } catch (const Error&) {
        ++rejected;
      }
    }
    CHECK(rejected > int(file.size()) - 10);
    CHECK(harmless < 10);
  }
  SUBCASE("a flipped payload byte names the tensor, when it is read") {
    std::vector<uint8_t> bad = file;
    bad[bad.size() - 2] ^= 0x10;  // inside "scalar", the last tensor with bytes
    file_write_durable(dir / "bad.safetensors", std::string(bad.begin(), bad.end()));
    const SafetensorsReader damaged(dir / "bad.safetensors");
    std::vector<float> ra(s.a.size());
    damaged.read_f32("a", ra.data(), int64_t(ra.size()));
    CHECK(ra == s.a);
    float rs = 0;
    CHECK_THROWS_WITH_AS(damaged.read_f32("scalar", &rs, 1),
                         doctest::Contains("bad.safetensors: tensor 'scalar' is corrupted: payload checksum"), Error);
  }
  SUBCASE("a directory or a missing file is refused by name") {
    CHECK_THROWS_WITH_AS(SafetensorsReader(dir.path()), doctest::Contains("a directory"), Error);
    CHECK_THROWS_WITH_AS(SafetensorsReader(dir / "missing.safetensors"), doctest::Contains("missing.safetensors"),
                         Error);
  }
}
