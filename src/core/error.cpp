#include "core/error.h"

namespace rfa {

void assert_failed(const char* expr, const char* file, int line, const std::string& what) {
  throw std::logic_error(fmt::format("internal error: {} failed at {}:{}{}{}", expr, file, line,
                                     what.empty() ? "" : ": ", what));
}

}  // namespace rfa
