// Device-side signalling between ranks through peer memory (coll/peer_plan.h for
// where the words live). The rules that make it safe:
//  - A flag word holds the epoch + 1 of the last call in which its writer reached
//    that point; flags only grow, so a reader compares, never resets. The epoch lives
//    in the rank's own scratch and the kernel advances it, so a CUDA graph that
//    replays the launch sees the next epoch, not one baked in at capture.
//  - A CTA's stores (to its own or a peer's memory) are made visible with
//    __threadfence_system() before it counts itself done; the last CTA of a rank to
//    arrive fences again and writes the flags with st.release.sys. Readers poll with
//    ld.acquire.sys, then __syncthreads() makes the data visible to the whole CTA.
//  - Every wait is bounded: it polls the communicator's abort word (host-mapped,
//    set by tacoCommAbort from any thread), the rank's failed word (another CTA of
//    this rank gave up), and a timer (TACO_WAIT_TIMEOUT_S). On failure the CTA
//    records why in the host-mapped status word and returns; it never traps, so the
//    CUDA context stays usable.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "coll/peer_plan.h"

namespace taco {
namespace peer {

// Status codes written to the host-mapped status word (0: none).
constexpr int kStatusTimeout = 1;
constexpr int kStatusAborted = 2;

__device__ __forceinline__ uint32_t loadAcquire(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void storeRelease(uint32_t* p, uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ uint64_t globalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ uint32_t* controlWord(char* scratch, size_t line) {
  return reinterpret_cast<uint32_t*>(scratch + line * kPeerLine);
}
__device__ __forceinline__ uint32_t* flagWord(char* scratch, int phase, int src) {
  return reinterpret_cast<uint32_t*>(scratch + kFlagsOffset + ((size_t)phase * kPeerMaxRanks + src) * kPeerLine);
}

// What a wait needs to give up cleanly.
struct WaitGuard {
  const int* abortWord;  // host-mapped: set by tacoCommAbort
  int* statusWord;       // host-mapped: why this communicator's kernels gave up
  uint32_t* failedWord;  // this rank's scratch: a CTA of this rank gave up
  uint64_t timeoutNs;
};

__device__ __forceinline__ void giveUp(const WaitGuard& g, int why) {
  *reinterpret_cast<volatile int*>(g.statusWord) = why;
  atomicExch(g.failedWord, 1u);
}

__device__ __forceinline__ bool failed(const WaitGuard& g) {
  return *reinterpret_cast<volatile uint32_t*>(g.failedWord) != 0;
}

// Waits until *flag >= target (wrap-safe). False when aborted, timed out or another CTA failed.
__device__ __forceinline__ bool waitFlag(const uint32_t* flag, uint32_t target, const WaitGuard& g) {
  if ((int32_t)(loadAcquire(flag) - target) >= 0) return true;
  const uint64_t start = globalTimerNs();
  for (uint32_t spin = 1;; ++spin) {
    if ((int32_t)(loadAcquire(flag) - target) >= 0) return true;
    if ((spin & 255) == 0) {
      if (*reinterpret_cast<const volatile int*>(g.abortWord) != 0) {
        giveUp(g, kStatusAborted);
        return false;
      }
      if (failed(g)) return false;
      if (globalTimerNs() - start > g.timeoutNs) {
        giveUp(g, kStatusTimeout);
        return false;
      }
    }
  }
}

// Every thread of the CTA calls it: thread i waits until rank i's flag `phase` in this
// rank's scratch is >= target, for every rank i < P except `skip` (-1: none). True when
// all arrived (and their data is visible to the whole CTA).
__device__ __forceinline__ bool ctaWaitRanks(char* mine, int phase, int P, int skip, uint32_t target,
                                             const WaitGuard& g) {
  bool ok = true;
  const int i = (int)threadIdx.x;
  if (i < P && i != skip) ok = waitFlag(flagWord(mine, phase, i), target, g);
  return __syncthreads_and(ok) != 0;
}

// Every thread of the CTA calls it after its stores for a phase. The last of rank `rank`'s
// `ctas` CTAs to arrive sets flag `phase` of `rank` to `value` in the scratch of every rank
// j < P except `skip` (-1: none).
__device__ __forceinline__ void ctaArrive(char* const* base, int P, int skip, int rank, int phase, int ctas,
                                          uint32_t value) {
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t* counter = controlWord(base[rank], kCtlArrive + phase);
    __threadfence_system();
    if (atomicAdd(counter, 1u) == (uint32_t)ctas - 1) {
      *reinterpret_cast<volatile uint32_t*>(counter) = 0;  // no CTA of this launch arrives here again
      __threadfence_system();
      for (int j = 0; j < P; ++j)
        if (j != skip) storeRelease(flagWord(base[j], phase, rank), value);
    }
  }
}

// Every thread of the CTA calls it last: the rank's last CTA advances the epoch.
__device__ __forceinline__ void ctaFinish(char* scratch, int ctas, uint32_t epoch) {
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t* finish = controlWord(scratch, kCtlFinish);
    __threadfence();
    if (atomicAdd(finish, 1u) == (uint32_t)ctas - 1) {
      *reinterpret_cast<volatile uint32_t*>(finish) = 0;
      *reinterpret_cast<volatile uint32_t*>(controlWord(scratch, kCtlEpoch)) = epoch + 1;
    }
  }
}

}  // namespace peer
}  // namespace taco
