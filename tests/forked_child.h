#pragma once
/// \file What a test's forked child calls first. The test process has threads (the emulated HCA's
/// I/O thread); its child has copies of the objects that only those threads referenced, some of
/// them from the threads' registers, which the child does not have, so a leak checker finds them
/// lost at the child's exit. Under valgrind (the valgrind label, tests/valgrind_tests.cmake) the
/// child's leaks are therefore still listed but no longer counted as errors; its memory errors
/// are. (LeakSanitizer cannot judge such a child either: docs/emulate.md, fork.)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif

namespace hcasim::testing {

/// In a forked child of a test, before anything else: leaks are not errors under valgrind.
/// Only a client request (no system call, no allocation), so a child that may make system
/// calls only can call it. Nothing outside valgrind.
inline void forked_child_leaks_are_not_errors() {
#if __has_include(<valgrind/valgrind.h>)
  if (RUNNING_ON_VALGRIND) VALGRIND_CLO_CHANGE("--errors-for-leak-kinds=none");
#endif
}

}  // namespace hcasim::testing
