// Which thread holds a communicator (core/comm.cc): a call's hold, a hold kept for collectives
// queued in an open group and given back at its end, and a group the library runs inside a call
// (the tuner's, at the first AllReduce), whose end must not give back the call's hold. White-box:
// comm.cc is compiled in (its symbols are hidden in libtaco); no GPU.
#include <thread>

#include "../../libtaco/core/check.cc"
#include "../../libtaco/core/comm.cc"
#include "../../libtaco/core/log.cc"
#include "../../libtaco/core/params.cc"
#include "check.h"

namespace {

// Whether another thread can take `c` now (it gives it straight back).
bool otherThreadCanTake(tacoComm* c) {
  bool ok = false;
  std::thread([&] {
    bool taken = false;
    ok = taco::commAcquire(c, "tacoAllReduce", &taken) == tacoSuccess;
    if (ok) taco::commRelease(c, taken);
  }).join();
  return ok;
}

}  // namespace

int main() {
  tacoComm c;
  c.magic = taco::kCommMagicLive;

  // A call: held for its duration, free after.
  bool taken = false;
  TEST_ASSERT_EQ_INT(taco::commAcquire(&c, "tacoAllReduce", &taken), tacoSuccess);
  TEST_ASSERT(taken);
  TEST_ASSERT(!otherThreadCanTake(&c));
  taco::commRelease(&c, taken);
  TEST_ASSERT(otherThreadCanTake(&c));

  // A collective queued in an open group: the hold outlives the call, until the group's end.
  TEST_ASSERT_EQ_INT(taco::commAcquire(&c, "tacoAllReduce", &taken), tacoSuccess);
  c.pendingOps = 1;  // submit() queued it
  taco::commRelease(&c, taken);
  TEST_ASSERT(!otherThreadCanTake(&c));
  bool again = true;  // a second collective of the same group: already this thread's
  TEST_ASSERT_EQ_INT(taco::commAcquire(&c, "tacoAllReduce", &again), tacoSuccess);
  TEST_ASSERT(!again);
  taco::commRelease(&c, again);
  TEST_ASSERT(!otherThreadCanTake(&c));
  c.pendingOps = 0;  // groupEnd: the queue is run
  taco::commReleaseAfterGroup(&c);
  TEST_ASSERT(otherThreadCanTake(&c));

  // A group the library runs inside a call (no entry point queued into it): its end leaves the
  // call's hold alone, so another thread cannot destroy the communicator under the call.
  TEST_ASSERT_EQ_INT(taco::commAcquire(&c, "tacoAllReduce", &taken), tacoSuccess);
  c.pendingOps = 1;  // the tuner's internal submit
  c.pendingOps = 0;  // and its groupEnd
  taco::commReleaseAfterGroup(&c);
  TEST_ASSERT_MSG(!otherThreadCanTake(&c), "a nested group's end gave back the call's hold");
  taco::commRelease(&c, taken);
  TEST_ASSERT(otherThreadCanTake(&c));
  return TEST_REPORT();
}
