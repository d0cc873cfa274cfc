// The peer kernels' phase timeline (TACO_PEER_TIMELINE; layout in coll/peer_timeline.h):
// thread 0 of each CTA writes %globaltimer into the CTA's row at each event. A
// diagnostic that must not change what it measures: no __syncthreads, so an event is
// thread 0's own view of its CTA (at an "end of" event the other warps may still be on
// their last tiles; the arrive that follows waits for them, which the next phase's time
// then includes). With the timeline off, an event costs one uniform branch on a kernel
// argument.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "coll/allreduce_peer.h"
#include "coll/peer_timeline.h"

namespace taco {
namespace peer {

__device__ __forceinline__ uint64_t timelineNow() {
  uint64_t t;
  // "memory": the compiler keeps the CTA's loads and stores on their side of the event.
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) : : "memory");
  return t;
}

// Every thread may call it; thread 0 records `event` (a PeerTimelineEvent).
__device__ __forceinline__ void mark(const PeerLaunch& L, int event) {
  if (L.timeline != nullptr && threadIdx.x == 0)
    L.timeline[(size_t)blockIdx.x * kTimelineSlots + event] = timelineNow();
}

// The start event, and which launch and rank wrote the row (timelineLaunchWord).
__device__ __forceinline__ void markStart(const PeerLaunch& L, int rank) {
  if (L.timeline != nullptr && threadIdx.x == 0) {
    uint64_t* row = L.timeline + (size_t)blockIdx.x * kTimelineSlots;
    row[kTimelineStart] = timelineNow();
    row[kTimelineLaunchSlot] = timelineLaunchWord(L.algo, rank, L.P, L.nLocal, L.ctasPerRank);
  }
}

}  // namespace peer
}  // namespace taco
