#pragma once
// Whether readers compare the checksums stored in files (safetensors tensors and
// tables, state.json, the token file header, a decode state's weights checksum).
// Always on, except in the fuzz harnesses (tests/fuzz/), which switch it off so
// that mutated inputs reach the parsing behind a checksum instead of stopping at
// the first mismatch: anyone can recompute an XXH64, so that code must be safe too.
namespace rfa {

bool checksums_enforced();
void checksums_enforce(bool on);  // tests/fuzz only

}  // namespace rfa
