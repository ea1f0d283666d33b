#include "kernels/onednn_call_scope.h"

namespace rfa {

#ifdef RFA_TEST_HOOKS
namespace {
// Per thread: a oneDNN call on one thread says nothing about what another allocates.
thread_local int t_depth = 0;
}  // namespace

int onednn_call_depth() { return t_depth; }
OnednnCallScope::OnednnCallScope() { ++t_depth; }
OnednnCallScope::~OnednnCallScope() { --t_depth; }
#endif

}  // namespace rfa
