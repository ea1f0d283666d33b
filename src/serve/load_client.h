#pragma once
// A load generator for an OpenAI-compatible server (`rfa bench serve`): S concurrent streamed
// completions, read on one thread with poll(2) so that the client costs the machine little (the
// server under test shares its cores; a thread or a JavaScript event loop per stream cost 50 µs a
// token, docs/serving.md). Each stream is one connection: a POST /v1/completions with
// `stream: true` and `stream_options.include_usage`, read with SseReader until `data: [DONE]`.
#include <cstdint>
#include <string>
#include <vector>

namespace rfa {

struct LoadTarget {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string api_key;  // sent as "Authorization: Bearer KEY" when set
};

// "http://HOST[:PORT][/]" (HOST a name, an IPv4 address or [IPv6]); throws rfa::Error naming the fix.
LoadTarget load_target_parse(const std::string& url);

struct LoadOptions {
  int streams = 1;            // concurrent requests
  int max_tokens = 256;       // each request's max_tokens (greedy decodes them all, unless EOS)
  int prompt_letters = 16;    // each prompt: that many letters and spaces, different per stream
  uint64_t prompt_seed = 1;   // stream i's prompt is load_prompt(prompt_letters, prompt_seed + i)
  double timeout_s = 600;     // the whole run; streams not done by then fail
  double temperature = 0;     // 0: greedy; above, each request sampled at it with top_k 0 and top_p 1
                              // (the OpenAI API's defaults) and its own seed (prompt_seed + i)
};

struct LoadResult {
  int streams = 0;
  int64_t generated = 0;      // completion_tokens summed over the streams' usage
  int64_t prompt_tokens = 0, cached_tokens = 0;  // summed likewise (cached: restored, not prefilled)
  double seconds = 0;         // from the first connect to the last [DONE]
  double tokens_per_s = 0;    // generated / seconds
  // Between one stream's consecutive text chunks (chunks read together: 0). A server that sends
  // tokens in batches (rfa serve's --stream-batch) shows its bursts' spacing in the high quantiles.
  double gap_ms_p50 = 0, gap_ms_p95 = 0, gap_ms_p99 = 0, gap_ms_max = 0;
  double ttft_ms_median = 0;  // request sent -> first text chunk
  double client_cpu_s = 0;    // this process's CPU time during the run
  int failed = 0;             // streams without a complete reply
  std::string first_error;    // the first failed stream's reason
};

// A prompt of `letters` letters and spaces from a seeded generator (about a token a letter with
// a character tokenizer).
std::string load_prompt(int letters, uint64_t seed);

// Runs the streams to their end. Throws rfa::Error when the server cannot be reached at all;
// a stream that fails on its own (an HTTP error, a broken reply) counts in `failed`.
LoadResult load_run(const LoadTarget& target, const LoadOptions& options);

}  // namespace rfa
