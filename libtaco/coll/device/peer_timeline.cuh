// The peer kernels' phase timeline (TACO_PEER_TIMELINE; layout in coll/peer_timeline.h):
// thread 0 of each CTA writes %globaltimer into the CTA's row at each event. An event
// is thread 0's own view of its CTA, except the end of a phase (markPhaseEnd), which
// waits for the CTA's other warps first: without that, a phase's last tiles were
// counted in the wait that follows it. That barrier is there only with the timeline on
// (the arrive that follows has its own); with it off, an event costs one uniform
// branch on a kernel argument.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "coll/peer_launch.h"
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

// Every thread of the CTA calls it at the end of a phase: records `event` once all the
// CTA's warps are done with the phase.
__device__ __forceinline__ void markPhaseEnd(const PeerLaunch& L, int event) {
  if (L.timeline != nullptr) {
    __syncthreads();
    if (threadIdx.x == 0) L.timeline[(size_t)blockIdx.x * kTimelineSlots + event] = timelineNow();
  }
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
