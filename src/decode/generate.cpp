#include "decode/generate.h"

#include <algorithm>
#include <exception>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"
#include "core/timer.h"

namespace rfa {

GenerateStats generate(Decoder<float>& dec, std::span<Sampler> samplers, std::span<const int32_t> prompt,
                       int64_t max_new_tokens, const std::function<void(int, int32_t)>& on_token,
                       int32_t stop_token) {
  const int B = dec.batch();
  RFA_ASSERT(samplers.size() == size_t(B), "{} samplers for {} rows", samplers.size(), B);
  if (max_new_tokens < 0) fail("-n {} must be >= 0", max_new_tokens);
  GenerateStats st;
  st.prompt_tokens = static_cast<int64_t>(prompt.size());
  std::vector<uint8_t> row(B > 1 && !prompt.empty() ? static_cast<size_t>(dec.row_bytes()) : 0);
  std::vector<int32_t> tokens(static_cast<size_t>(B)), drawn(static_cast<size_t>(B));
  std::vector<std::exception_ptr> errors(static_cast<size_t>(B));  // a row's sampling error, rethrown
  std::vector<int> rows(static_cast<size_t>(B)), step_rows(static_cast<size_t>(B));  // the rows still going; a step's
  for (int b = 0; b < B; ++b) rows[size_t(b)] = b;
  int active = B;
  Timer timer;
  for (int64_t t0 = 0; t0 < st.prompt_tokens; t0 += dec.max_segment()) {
    const int S = static_cast<int>(std::min<int64_t>(dec.max_segment(), st.prompt_tokens - t0));
    dec.prefill_row(0, prompt.data() + t0, S);
  }
  if (!row.empty()) {  // every row starts where row 0's prefill left it
    dec.row_save(0, row.data());
    for (int b = 1; b < B; ++b) dec.row_restore(b, row.data());
  }
  for (int b = 0; b < B; ++b)
    if (dec.row_logits(b) == nullptr)
      fail("nothing to continue from: the prompt is empty and no state was loaded; give --prompt");
  st.prefill_seconds = timer.seconds();
  timer.reset();
  for (int64_t i = 0; i < max_new_tokens; ++i) {
    // Every active row samples; a row that samples the stop token is fed it in this step and then leaves.
    // The rows' draws side by side on the pool (each row its own sampler; a draw is a pure function
    // of seed, row and position). A sampler's error is kept, not thrown inside the region, and the
    // first row's rethrown after it.
    int64_t work = 0;
    for (int j = 0; j < active; ++j) work += samplers[size_t(rows[size_t(j)])].row_work();
    parallel_for(active, sampler_rows_grain(active, work), [&](int64_t j) {
      const int b = rows[size_t(j)];
      try {
        drawn[size_t(j)] = samplers[size_t(b)].sample(dec.row_logits(b), 0, dec.position(b));
      } catch (...) {
        errors[size_t(j)] = std::current_exception();
      }
    });
    for (int j = 0; j < active; ++j)
      if (errors[size_t(j)]) std::rethrow_exception(errors[size_t(j)]);
    int n = 0, leaving = 0;
    for (int j = 0; j < active; ++j) {
      const int b = rows[size_t(j)];
      const int32_t token = drawn[size_t(j)];
      step_rows[size_t(n)] = b;
      tokens[size_t(n++)] = token;
      if (token == stop_token) {
        ++leaving;
        rows[size_t(j)] = -1;
        continue;
      }
      on_token(b, token);
      ++st.generated;
    }
    dec.step_rows(step_rows.data(), n, tokens.data());
    if (leaving > 0) {
      st.stopped += leaving;
      active = static_cast<int>(std::remove(rows.begin(), rows.begin() + active, -1) - rows.begin());
      if (active == 0) break;
    }
  }
  st.decode_seconds = timer.seconds();
  st.state_bytes = dec.state_bytes();
  return st;
}

}  // namespace rfa
