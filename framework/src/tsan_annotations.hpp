#pragma once
// Happens-before edges for ThreadSanitizer around oneTBB. Debian's libtbb is
// not instrumented, so TSan does not see that spawning a task orders what
// the spawner wrote before what the task reads (and likewise for a task's
// end and the join, and for TBB's concurrent queues). These annotations
// state those edges explicitly; outside TSan builds they vanish.

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define MAPEX_TSAN_RELEASE(addr) \
  __tsan_release(const_cast<void*>(static_cast<const volatile void*>(addr)))
#define MAPEX_TSAN_ACQUIRE(addr) \
  __tsan_acquire(const_cast<void*>(static_cast<const volatile void*>(addr)))
#else
#define MAPEX_TSAN_RELEASE(addr) static_cast<void>(addr)
#define MAPEX_TSAN_ACQUIRE(addr) static_cast<void>(addr)
#endif
