#include <doctest/doctest.h>

#include <sys/resource.h>

#include <csignal>
#include <filesystem>

#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_dir.h"
#include "io/file_io.h"
#include "support/temp_dir.h"
#include "io/hash.h"
#include "checkpoint/checkpoint_test_support.h"
#include "core/error.h"

using namespace rfa;
namespace fs = std::filesystem;

namespace {

CheckpointConfig retention(int keep_last, bool keep_best) {
  CheckpointConfig c;
  c.keep_last = keep_last;
  c.keep_best = keep_best;
  return c;
}

std::vector<std::string> names(const std::string& root) {
  std::vector<std::string> out;
  for (const CheckpointEntry& e : checkpoint_list(root)) out.push_back(e.name);
  return out;
}

bool has_temp(const std::string& root) {
  for (const auto& entry : fs::directory_iterator(root)) {
    if (entry.path().filename().string().find(".tmp-") != std::string::npos) return true;
  }
  return false;
}

// Caps the size of files this process may write, so writes fail with EFBIG like a full disk.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);  // make write() return EFBIG instead of killing us
    rlimit limit = saved_;
    limit.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit saved_{};
  void (*old_handler_)(int) = nullptr;
};

}  // namespace

TEST_CASE("checkpoint: save then load is bit-identical and validated") {
  test::TempDir tmp;
  test::ToyModel toy(1);
  file_write_durable(tmp / "tok.model", "fake sentencepiece model");
  CheckpointContents c = toy.contents(500, 3.25);
  c.tokenizer_path = tmp / "tok.model";
  c.state.tokenizer_xxh64 = tokenizer_xxh64(tmp / "tok.model");
  std::string root = tmp / "checkpoints";
  std::string dir = checkpoint_save(root, c, retention(3, true));
  CHECK(dir == root + "/step-000500");
  CHECK(checkpoint_latest(root) == dir);
  CHECK_FALSE(has_temp(root));

  LoadedCheckpoint loaded = checkpoint_load(dir, toy.model_specs(), toy.optimizer_specs());
  CHECK(toy.matches(loaded));
  std::vector<float> m(toy.m.size());
  loaded.optimizer.read_f32("m", m.data(), int64_t(m.size()));
  CHECK(m == toy.m);
  CHECK(loaded.state.step == 500);
  CHECK(loaded.state.val_loss == 3.25);
  CHECK(loaded.config_yaml == c.config_yaml);
  CHECK(loaded.tokenizer_path == dir + "/tokenizer.model");
  CHECK(file_read_text(loaded.tokenizer_path) == "fake sentencepiece model");
  CHECK(loaded.model.metadata.at("rfa.content") == "model");

  // Inference needs no optimizer state.
  fs::remove(dir + "/optimizer.safetensors");
  CHECK(toy.matches(checkpoint_load(dir, toy.model_specs(), {})));
  CHECK_THROWS_WITH_AS(checkpoint_load(dir, toy.model_specs(), toy.optimizer_specs()),
                       doctest::Contains("optimizer.safetensors': No such file"), Error);
}

TEST_CASE("checkpoint: load reports shape mismatch, corruption, bad version and tokenizer damage") {
  test::TempDir tmp;
  test::ToyModel toy(2);
  std::string dir = checkpoint_save(tmp / "ck", toy.contents(10, 1.0), retention(3, true));

  test::ToyModel bigger(2, 64);  // the config now says wq is [8, 8]
  CHECK_THROWS_WITH_AS(checkpoint_load(dir, bigger.model_specs(), {}),
                       doctest::Contains("tensor 'layers.0.attn.wq' is F32 [4, 8] in the checkpoint but the config "
                                         "expects F32 [8, 8]"),
                       Error);

  std::vector<uint8_t> bytes = file_read_bytes(dir + "/model.safetensors");
  bytes[bytes.size() - 5] ^= 1;  // inside "norm"
  file_write_durable(dir + "/model.safetensors", std::string(bytes.begin(), bytes.end()));
  {  // the header is whole: the payload's checksum is checked as the tensor is read into its destination
    const LoadedCheckpoint loaded = checkpoint_load(dir, toy.model_specs(), {});
    std::vector<float> wq(toy.wq.size()), norm(toy.norm.size());
    loaded.model.read_f32("layers.0.attn.wq", wq.data(), int64_t(wq.size()));
    CHECK(wq == toy.wq);
    CHECK_THROWS_WITH_AS(loaded.model.read_f32("norm", norm.data(), int64_t(norm.size())),
                         doctest::Contains("model.safetensors: tensor 'norm' is corrupted"), Error);
  }
  bytes.resize(bytes.size() / 2);
  file_write_durable(dir + "/model.safetensors", std::string(bytes.begin(), bytes.end()));
  CHECK_THROWS_AS(checkpoint_load(dir, toy.model_specs(), {}), Error);

  std::string state = file_read_text(dir + "/state.json");
  state.replace(state.find("\"format_version\": 2"), 19, "\"format_version\": 7");
  file_write_durable(dir + "/state.json", state);
  CHECK_THROWS_WITH_AS(checkpoint_load(dir, toy.model_specs(), {}), doctest::Contains("format_version 7"), Error);

  test::ToyModel toy2(3);
  file_write_durable(tmp / "tok.model", "tokenizer");
  CheckpointContents c = toy2.contents(20, 1.0);
  c.tokenizer_path = tmp / "tok.model";
  c.state.tokenizer_xxh64 = tokenizer_xxh64(tmp / "tok.model");
  std::string dir2 = checkpoint_save(tmp / "ck", c, retention(3, true));
  file_write_durable(dir2 + "/tokenizer.model", "tokenizes");
  CHECK_THROWS_WITH_AS(checkpoint_load(dir2, toy2.model_specs(), {}),
                       doctest::Contains(("tokenizer copy " + dir2 + "/tokenizer.model is corrupt").c_str()), Error);
}

TEST_CASE("checkpoint: retention keeps the last K plus the best by validation loss") {
  test::TempDir tmp;
  test::ToyModel toy(4);
  std::string root = tmp / "ck";
  const double losses[] = {5.0, 2.0, 4.0, 3.5, 3.0, 2.5};  // the best is step 200
  for (int i = 0; i < 6; ++i) checkpoint_save(root, toy.contents(100 * (i + 1), losses[i]), retention(2, true));
  CHECK(names(root) == std::vector<std::string>{"step-000200", "step-000500", "step-000600"});
  CHECK(checkpoint_latest(root) == root + "/step-000600");
  checkpoint_save(root, toy.contents(700, 1.0), retention(2, false));
  CHECK(names(root) == std::vector<std::string>{"step-000600", "step-000700"});
  // A run that was rolled back: saving an older step keeps `latest` (the newest save) alive.
  checkpoint_save(root, toy.contents(650, std::nan("")), retention(1, false));
  CHECK(checkpoint_latest(root) == root + "/step-000650");
  CHECK(names(root) == std::vector<std::string>{"step-000650", "step-000700"});
}

TEST_CASE("checkpoint: saving the same step again replaces it in one step") {
  test::TempDir tmp;
  std::string root = tmp / "ck";
  test::ToyModel first(5), second(6);
  checkpoint_save(root, first.contents(100, 1.0), retention(3, true));
  checkpoint_save(root, second.contents(100, 1.0), retention(3, true));
  CHECK(second.matches(checkpoint_load(checkpoint_latest(root), second.model_specs(), {})));
  CHECK_FALSE(has_temp(root));
}

TEST_CASE("checkpoint: a failed write raises path and reason and keeps the good checkpoint") {
  test::TempDir tmp;
  std::string root = tmp / "ck";
  test::ToyModel good(7), big(8, 1 << 16);
  checkpoint_save(root, good.contents(100, 1.0), retention(1, false));

  SUBCASE("file too large (stands in for a full disk)") {
    {
      FileSizeLimit limit(64 * 1024);  // the big model needs 256 KiB
      CHECK_THROWS_WITH_AS(checkpoint_save(root, big.contents(200, 0.5), retention(1, false)),
                           doctest::Contains("model.safetensors': File too large"), Error);
    }
  }
  SUBCASE("the fill callback fails midway") {
    CHECK_THROWS_WITH_AS(checkpoint_dir_commit(root, "step-000200",
                                               [](const std::string& temp) {
                                                 file_write_durable(temp + "/model.safetensors", "partial");
                                                 fail("simulated failure");
                                               }),
                         doctest::Contains("simulated failure"), Error);
  }
  SUBCASE("the root cannot be created") {
    file_write_durable(tmp / "file", "x");
    CHECK_THROWS_WITH_AS(checkpoint_save(tmp / "file/ck", big.contents(200, 0.5), retention(1, false)),
                         doctest::Contains("cannot create checkpoint directory"), Error);
  }
  CHECK(names(root) == std::vector<std::string>{"step-000100"});
  CHECK(checkpoint_latest(root) == root + "/step-000100");
  CHECK(good.matches(checkpoint_load(checkpoint_latest(root), good.model_specs(), good.optimizer_specs())));
  CHECK_FALSE(has_temp(root));
}

TEST_CASE("checkpoint: latest pointer errors and stale temp dirs") {
  test::TempDir tmp;
  std::string root = tmp / "ck";
  CHECK(checkpoint_latest(root).empty());  // no checkpoint yet
  test::ToyModel toy(9);
  checkpoint_save(root, toy.contents(1, 1.0), retention(3, true));
  // A writer that died (pid 999999999 does not exist) left a temp dir behind; the next save removes it.
  fs::create_directories(root + "/step-000002.tmp-999999999");
  file_write_durable(root + "/latest.tmp-999999999", "step-000002\n");
  CHECK(names(root) == std::vector<std::string>{"step-000001"});  // never listed as a checkpoint
  checkpoint_save(root, toy.contents(3, 1.0), retention(3, true));
  CHECK_FALSE(has_temp(root));

  file_write_durable(root + "/latest", "../../etc\n");
  CHECK_THROWS_WITH_AS(checkpoint_latest(root), doctest::Contains("is corrupted"), Error);
  // Each names the fix: the newest checkpoint that has its weights.
  const std::string repair = "point it at the newest checkpoint there with `echo step-000003 > " + root + "/latest`";
  CHECK_THROWS_WITH_AS(checkpoint_latest(root), doctest::Contains(repair.c_str()), Error);
  file_write_durable(root + "/latest", "step-000999\n");
  CHECK_THROWS_WITH_AS(checkpoint_latest(root), doctest::Contains("step-000999' but that directory is missing"),
                       Error);
  CHECK_THROWS_WITH_AS(checkpoint_latest(root), doctest::Contains(repair.c_str()), Error);
  file_write_durable(root + "/latest", std::string("\x01\xff") + std::string(100, 'x'));  // printed escaped, cut
  CHECK_THROWS_WITH_AS(checkpoint_latest(root), doctest::Contains("ck/\\x01\\xffxxx"), Error);
  CHECK_THROWS_WITH_AS(checkpoint_latest(root), doctest::Contains("xxx...' but that directory is missing"), Error);
  fs::remove_all(root + "/step-000001");
  fs::remove_all(root + "/step-000003");
  CHECK_THROWS_WITH_AS(checkpoint_latest(root), doctest::Contains(("no checkpoint is left under " + root).c_str()), Error);
  CHECK(checkpoint_name(42) == "step-000042");
  CHECK(checkpoint_name(12345678) == "step-12345678");
}

TEST_CASE("checkpoint: a missing or damaged file names the other checkpoints to use instead") {
  test::TempDir tmp;
  std::string root = tmp / "ck";
  test::ToyModel toy(9);
  checkpoint_save(root, toy.contents(1, 1.0), retention(3, true));
  const std::string first = checkpoint_save(root, toy.contents(2, 1.0), retention(3, true));
  const std::string dir = checkpoint_save(root, toy.contents(3, 1.0), retention(3, true));
  // The fix lists the others, newest first; it was only "No such file or directory".
  const std::string fix = "checkpoint " + dir + " is damaged: restore the file, or use another checkpoint by naming its "
                          "directory (newest first: " + first + ", " + root + "/step-000001)";
  fs::remove(dir + "/state.json");
  CHECK_THROWS_WITH_AS(checkpoint_load(dir, toy.model_specs(), toy.optimizer_specs()), doctest::Contains(fix.c_str()),
                       Error);
  checkpoint_save(root, toy.contents(3, 1.0), retention(3, true));
  fs::resize_file(dir + "/optimizer.safetensors", 100);
  CHECK_THROWS_WITH_AS(checkpoint_load(dir, toy.model_specs(), toy.optimizer_specs()), doctest::Contains(fix.c_str()),
                       Error);
  fs::remove_all(root + "/step-000001");
  fs::remove_all(first);
  CHECK_THROWS_WITH_AS(checkpoint_load(dir, toy.model_specs(), toy.optimizer_specs()),
                       doctest::Contains("is damaged and has no other checkpoint beside it"), Error);
}

TEST_CASE("checkpoint: an edited or corrupted config.yaml is refused (state.json records its checksum)") {
  // A resume trains with the saved config: a changed optim.lr or train.batch_size there went unnoticed.
  test::TempDir tmp;
  std::string root = tmp / "ck";
  test::ToyModel toy(9);
  checkpoint_save(root, toy.contents(1, 1.0), retention(3, true));
  const std::string dir = checkpoint_save(root, toy.contents(2, 1.0), retention(3, true));
  CHECK(toy.matches(checkpoint_load(dir, toy.model_specs(), toy.optimizer_specs())));
  const std::string yaml = file_read_text(dir + "/config.yaml");
  file_write_durable(dir + "/config.yaml", yaml + "optim:\n  lr: 1.0\n");
  CHECK_THROWS_WITH_AS(checkpoint_load(dir, toy.model_specs(), toy.optimizer_specs()),
                       doctest::Contains("config.yaml: checksum"), Error);
  CHECK_THROWS_WITH_AS(checkpoint_load(dir, toy.model_specs(), toy.optimizer_specs()),
                       doctest::Contains(("the saved config was edited or corrupted (a resume trains with it as "
                                          "saved; --set changes the keys it allows); checkpoint " + dir +
                                          " is damaged: restore the file, or use another checkpoint")
                                             .c_str()),
                       Error);
  file_write_durable(dir + "/config.yaml", yaml);
  CHECK(toy.matches(checkpoint_load(dir, toy.model_specs(), toy.optimizer_specs())));
}
