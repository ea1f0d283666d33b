#include "train/train_validation.h"

#include <algorithm>

#include "core/error.h"
#include "core/log.h"

namespace rfa {

ValidationText validation_text(const TokenSplit& val, const TrainConfig& tc, int context_length) {
  if (val.size() < 2)
    fail("the validation split has {} tokens; it needs at least 2: raise data.val_fraction or use a longer corpus",
         val.size());
  ValidationText v;
  const int64_t cap = int64_t(tc.eval_batches) * tc.batch_size * context_length + 1;
  if (tc.eval_batches == 0 || cap >= val.size()) {
    v.tokens = val.to_vector();
    v.what = fmt::format("the whole validation split ({} tokens)", val.size());
  } else {
    v.tokens.resize(static_cast<size_t>(cap));
    val.copy(0, cap, v.tokens.data());
    v.what = fmt::format("the first {} of the {} validation tokens (train.eval_batches={} x batch {} x context {}; "
                         "0 = all)",
                         cap, val.size(), tc.eval_batches, tc.batch_size, context_length);
  }
  return v;
}

}  // namespace rfa
