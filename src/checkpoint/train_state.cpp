#include "checkpoint/train_state.h"

#include <cmath>

#include "io/hash.h"
#include "io/json.h"
#include "core/checksum_policy.h"
#include "core/error.h"

namespace rfa {
namespace {

// Every field but the checksum, one per line, as written: the text the checksum covers.
// Parsed values print back to the same text (numbers in shortest round-trip form).
std::string state_fields(const TrainState& s) {
  // NaN / inf are not JSON: they are written as null and read back as NaN (val_loss)
  // or +inf (best_val_loss: no evaluation yet).
  return fmt::format(
      "  \"format_version\": {},\n"
      "  \"step\": {},\n"
      "  \"seed\": {},\n"
      "  \"data_position\": {},\n"
      "  \"tokens_seen\": {},\n"
      "  \"wall_seconds\": {},\n"
      "  \"val_loss\": {},\n"
      "  \"best_val_loss\": {},\n"
      "  \"tokenizer_checksum\": {},\n"
      "  \"threads\": {}",
      s.format_version, s.step, s.seed, s.data_position, s.tokens_seen, json_number(s.wall_seconds),
      json_number(s.val_loss), json_number(s.best_val_loss), json_quote(s.tokenizer_xxh64), s.threads) +
         (s.ranks > 0 ? fmt::format(",\n  \"ranks\": {},\n  \"grad_accum\": {}", s.ranks, s.grad_accum) : "") +
         (s.config_xxh64.empty() ? "" : fmt::format(",\n  \"config_checksum\": {}", json_quote(s.config_xxh64))) +
         (s.init_from.empty() ? ""
                              : fmt::format(",\n  \"init_from\": {},\n  \"init_from_step\": {},\n  \"init_from_checksum\": {}",
                                            json_quote(s.init_from), s.init_from_step, json_quote(s.init_from_xxh64)));
}

std::string state_checksum(const TrainState& s) {
  const std::string fields = state_fields(s);
  return hash_hex(xxhash64(fields.data(), fields.size()));
}

}  // namespace

std::string train_state_serialize(const TrainState& s) {
  return fmt::format("{{\n{},\n  \"checksum\": {}\n}}\n", state_fields(s), json_quote(state_checksum(s)));
}

TrainState train_state_parse(std::string_view json, const std::string& source) {
  JsonValue root = json_parse(json, source);
  if (root.kind != JsonValue::Kind::object) fail("{}: expected a JSON object", source);
  auto field = [&](const char* name) -> const JsonValue& {
    const JsonValue* v = root.find(name);
    if (v == nullptr) fail("{}: missing field \"{}\"", source, name);
    return *v;
  };
  auto what = [&](const char* name) { return fmt::format("{}: \"{}\"", source, name); };
  TrainState s;
  int64_t version = field("format_version").as_int64(what("format_version"));
  if (version < kCheckpointFormatOldest || version > kCheckpointFormatVersion) {
    fail("{}: checkpoint format_version {} is not supported; this rfa reads versions {} to {}", source, version,
         kCheckpointFormatOldest, kCheckpointFormatVersion);
  }
  s.format_version = static_cast<int>(version);
  s.step = field("step").as_int64(what("step"));
  s.seed = field("seed").as_uint64(what("seed"));
  s.data_position = field("data_position").as_int64(what("data_position"));
  s.tokens_seen = field("tokens_seen").as_int64(what("tokens_seen"));
  s.wall_seconds = field("wall_seconds").as_double(what("wall_seconds"));
  s.val_loss = field("val_loss").as_double(what("val_loss"));
  s.best_val_loss = field("best_val_loss").as_double(what("best_val_loss"));
  if (std::isnan(s.best_val_loss)) s.best_val_loss = std::numeric_limits<double>::infinity();
  s.tokenizer_xxh64 = field("tokenizer_checksum").as_string(what("tokenizer_checksum"));
  if (const JsonValue* t = root.find("threads")) s.threads = static_cast<int>(t->as_int64(what("threads")));
  if (const JsonValue* r = root.find("ranks")) {
    s.ranks = static_cast<int>(r->as_int64(what("ranks")));
    s.grad_accum = static_cast<int>(field("grad_accum").as_int64(what("grad_accum")));
    if (s.ranks < 1 || s.grad_accum < 1)
      fail("{}: ranks {} and grad_accum {} must be >= 1", source, s.ranks, s.grad_accum);
  }
  if (const JsonValue* c = root.find("config_checksum")) s.config_xxh64 = c->as_string(what("config_checksum"));
  if (const JsonValue* i = root.find("init_from")) {
    s.init_from = i->as_string(what("init_from"));
    s.init_from_step = field("init_from_step").as_int64(what("init_from_step"));
    s.init_from_xxh64 = field("init_from_checksum").as_string(what("init_from_checksum"));
    if (s.init_from.empty() || s.init_from_step < 0)
      fail("{}: init_from '{}' must name the parent checkpoint and init_from_step {} be >= 0", source, s.init_from,
           s.init_from_step);
  }
  if (s.step < 0 || s.data_position < 0 || s.tokens_seen < 0) {
    fail("{}: step {}, data_position {} and tokens_seen {} must be >= 0", source, s.step, s.data_position,
         s.tokens_seen);
  }
  // Version 1 files were written without a checksum; from version 2 on it is required.
  const JsonValue* stored = root.find("checksum");
  if (stored != nullptr || version >= 2) {
    const std::string& want = field("checksum").as_string(what("checksum"));
    if (const std::string actual = state_checksum(s); checksums_enforced() && actual != want)
      fail("{}: checksum {} of its fields differs from the stored {}: the file was edited or corrupted (step {} "
           "as read). Restore the original state.json, or resume from another checkpoint with `rfa train --resume "
           "RUN/checkpoints/step-N`; state.json is not meant to be edited",
           source, actual, want, s.step);
  }
  return s;
}

}  // namespace rfa
