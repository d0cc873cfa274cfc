// The calling thread's group (tacoGroupStart/End; coll/executor.cc keeps it), for code that
// runs collectives of its own while a caller's group may be open: the tuner, which measures at
// the first AllReduce of a dtype, inside the caller's group on a loopback world.
#pragma once
#include <vector>

#include "coll/schedule.h"

namespace taco {

// How deep the calling thread's groups are nested (0: no group open).
int groupDepth();

// While one lives, the calling thread has no open group: its groups start from none, and its
// calls run at once (or at their own group's end). The caller's queued calls, untouched, come
// back when it ends, with the caller's nesting.
class GroupSuspension {
 public:
  GroupSuspension();
  ~GroupSuspension();
  GroupSuspension(const GroupSuspension&) = delete;
  GroupSuspension& operator=(const GroupSuspension&) = delete;

 private:
  int depth_;
  std::vector<Schedule> pending_;
};

}  // namespace taco
