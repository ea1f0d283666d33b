// The registry of attention kinds: one table per kind, each defined in its own files
// (attention_kind.h), listed by RFA_ATTENTION_KINDS (config/config.h).
#include <fmt/format.h>

#include "attention/attention_kind.h"
#include "core/error.h"

namespace rfa {

#define RFA_ATTENTION_KIND_DECLARE(name) extern const AttentionKindDef kAttentionKind_##name;
RFA_ATTENTION_KINDS(RFA_ATTENTION_KIND_DECLARE)
#undef RFA_ATTENTION_KIND_DECLARE

namespace {

#define RFA_ATTENTION_KIND_ENTRY(name) &kAttentionKind_##name,
const AttentionKindDef* const kKinds[] = {RFA_ATTENTION_KINDS(RFA_ATTENTION_KIND_ENTRY)};
#undef RFA_ATTENTION_KIND_ENTRY

}  // namespace

const AttentionKindDef& attention_kind_def(AttentionKind kind) {
  for (const AttentionKindDef* def : kKinds)
    if (def->kind == kind) return *def;
  RFA_ASSERT(false, "attention kind {} has no table", static_cast<int>(kind));
  return *kKinds[0];
}

std::string attention_positions_form(const AttentionSpec& spec) {
  return spec.rope ? fmt::format("rope theta {}", spec.rope_theta) : std::string("no positions");
}

}  // namespace rfa
