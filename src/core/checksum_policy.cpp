#include "core/checksum_policy.h"

namespace rfa {
namespace {

bool enforced = true;  // set once by a fuzz harness before any file is read

}  // namespace

bool checksums_enforced() { return enforced; }
void checksums_enforce(bool on) { enforced = on; }

}  // namespace rfa
