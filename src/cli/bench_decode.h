#pragma once
// rfa bench decode: its options and what its two benchmarks share. bench_decode_command.cpp
// times one row at several positions (rfa_gate against softmax); bench_decode_rows.cpp times
// K rows decoded in one batched step (rfa generate --num-samples K), with --batch.
#include <string>
#include <vector>

#include "config/config.h"
#include "decode/decoder.h"
#include "model/model_spec.h"

namespace rfa {

struct BenchDecodeArgs {
  std::string config;
  std::vector<std::string> sets;
  std::vector<int64_t> positions = {64, 512, 2048, 8192};
  std::vector<int> batch;  // --batch: rows per batched step; empty = the one-row benchmark
  int slots = 0;           // --slots: the decoder's rows, of which a step runs K (a server's --parallel); 0 = K
  int steps = 64;
  int repeats = 7;
  int vocab = 384;  // the tinyshakespeare char model's upper bound
  bool rfa_only = false;  // skip softmax (profiling the RFA step)
  bool profile = false;   // --profile (with --batch): one more run of the steps, timed kernel by kernel
  Precision precision = Precision::fp32;
};

double bench_median(std::vector<double> v);
// The benchmark model of `kind`: the config's shape, every layer that kind, --vocab.
ModelSpec bench_decode_spec(const Config& base, AttentionKind kind, const BenchDecodeArgs& a);
// Refuses a kind whose model, decoder (batch rows) and tokens cannot fit, before any kind runs.
void bench_decode_memory_require(const Config& base, AttentionKind kind, const BenchDecodeArgs& a, int batch);
DecoderOptions bench_decoder_options(const BenchDecodeArgs& a, int batch);
// The recurrent kind both benchmarks time: the config's when it is a recurrent one (rfa, rfa_delta),
// else rfa_gate.
AttentionKind bench_decode_recurrent_kind(const Config& cfg);

// Aggregate tokens/s of K rows decoded in one batched step, for each K in a.batch.
void bench_decode_rows(const Config& cfg, const BenchDecodeArgs& a);

}  // namespace rfa
