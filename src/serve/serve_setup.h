#pragma once
// What `rfa serve` and `rfa chat` build alike: the model from a run, its decoding slots,
// the state cache, the engine, the chat template and (with --state-dir) the state files.
#include <memory>
#include <string>

#include "model/model_load.h"
#include "serve/chat_template.h"
#include "serve/engine.h"
#include "serve/sequence_backend.h"
#include "serve/state_cache.h"
#include "serve/state_files.h"

namespace rfa {

struct ServeSetupOptions {
  std::string run;                 // RUN or checkpoint directory
  int parallel = 4;                // --parallel: slots
  int queue = 16;                  // --queue
  int64_t cache_mib = 256;         // --cache-mib; 0 = no cache
  int prefill_chunk = 256;         // --prefill-chunk
  int stream_batch = 0;            // --stream-batch; 0 = auto (engine.h)
  int64_t ctx_size = -1;           // --ctx-size; -1 = the model's (softmax: its context; RoPE: 8192; else none)
  int64_t max_prompt_tokens = 8192;
  std::string state_dir;           // --state-dir; "" = no state files
  std::string chat_template;       // --chat-template; "" = the run's
  Precision precision = Precision::fp32;
};

struct ServeSetup {
  LoadedModel loaded;
  std::unique_ptr<SequenceBackend> backend;
  std::unique_ptr<StateCache> cache;  // null with --cache-mib 0
  std::unique_ptr<StateFiles> files;  // null without --state-dir
  const ChatTemplate* chat_template = nullptr;
  std::unique_ptr<Engine> engine;     // last: its thread starts at once
  int64_t max_positions = 0;
};

// Throws Error naming the option, the value and the fix.
std::unique_ptr<ServeSetup> serve_setup(const ServeSetupOptions& options);

}  // namespace rfa
