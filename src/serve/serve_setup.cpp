#include "serve/serve_setup.h"

#include <algorithm>

#include "attention/attention_core.h"
#include "core/error.h"
#include "core/log.h"
#include "core/memory_check.h"
#include "decode/decoder_state_io.h"
#include "serve/state_pool.h"

namespace rfa {
namespace {

constexpr int64_t kRopeDefaultPositions = 8192;

// Positions a conversation can reach: softmax's KV cache is bounded by the training
// context; RoPE needs a rotation table; an RFA kind without positions has no limit.
int64_t positions_for(const ModelSpec& s, int64_t ctx_size) {
  const int64_t context = s.model.context_length;
  if (s.attn_state_grows()) {
    if (ctx_size > context)
      fail("--ctx-size {} is past this softmax model's training context of {} positions, which bounds its KV "
           "cache; give at most {} (RFA kinds have no such limit)",
           ctx_size, context, context);
    return ctx_size > 0 ? ctx_size : context;
  }
  const bool rope = std::any_of(s.attn.begin(), s.attn.end(), [](const AttentionSpec& a) { return a.rope; });
  if (rope) return ctx_size > 0 ? ctx_size : kRopeDefaultPositions;
  return ctx_size > 0 ? ctx_size : 0;
}

}  // namespace

std::unique_ptr<ServeSetup> serve_setup(const ServeSetupOptions& o) {
  if (o.cache_mib < 0) fail("--cache-mib {} must be >= 0 (0 = no state cache)", o.cache_mib);
  if (o.queue < 0) fail("--queue {} must be >= 0", o.queue);
  auto s = std::make_unique<ServeSetup>();
  s->chat_template = o.chat_template.empty() ? nullptr : &chat_template_find(o.chat_template);
  s->loaded = model_load(o.run, o.precision);
  Model<float>& model = *s->loaded.model;
  if (!s->chat_template) s->chat_template = &chat_template_find(chat_template_for_run(s->loaded));
  s->max_positions = positions_for(model.spec, o.ctx_size);
  BackendOptions b;
  b.slots = o.parallel;
  b.prefill_chunk = o.prefill_chunk;
  b.max_positions = s->max_positions;
  b.precision = o.precision;
  // The state files' key is the weights' checksum: taken before the backend releases the matrices.
  const std::string checksum = o.state_dir.empty() ? "" : model_checksum(model);
  b.release_model_matrices = true;  // nothing else reads the model's matrices from here on
  s->backend = sequence_backend_create(model, b);
  if (o.cache_mib > 0) {
    // The cache fills as conversations come, up to its bound: checked now, after the decoder's
    // memory is taken, so that the bound fits (a container's limit, too) before it is ever reached.
    MemoryEstimate cache;
    cache.add("the state cache at its bound", double(o.cache_mib) * 0x1p20, fmt::format("--cache-mib ({})", o.cache_mib));
    memory_require(cache, "the state cache");
    s->cache = std::make_unique<StateCache>(o.cache_mib << 20);
    // The cached states' memory in huge pages, up to the cache's bound and two regions more
    // (a new entry is made before the one it evicts is freed; a request may hold an evicted one).
    StatePool::shared().set_limit(static_cast<size_t>(o.cache_mib << 20) + 2 * StatePool::kRegionBytes);
  }
  if (!o.state_dir.empty()) {
    if (!s->cache) fail("--state-dir needs the state cache (states are saved from it); drop --cache-mib 0");
    s->files = std::make_unique<StateFiles>(o.state_dir, checksum, s->backend->state_layout(),
                                            model.spec.V);
  }
  if (s->loaded.tokenizer->eos_id() < 0)
    log_warn("serve", "the tokenizer has no end-of-sequence token: replies end only at max_tokens or a stop string");
  EngineOptions e;
  e.queue = o.queue;
  e.max_prompt_tokens = o.max_prompt_tokens;
  e.stream_batch = o.stream_batch;
  s->engine = std::make_unique<Engine>(*s->backend, *s->loaded.tokenizer, s->cache.get(), e);
  return s;
}

}  // namespace rfa
