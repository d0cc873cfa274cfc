// Device-side signalling between ranks through peer memory (coll/peer_plan.h for
// where the words live). The rules that make it safe:
//  - A flag word holds the epoch + 1 of the last call in which its writer reached
//    that point; flags only grow, so a reader compares, never resets. The epoch lives
//    in the rank's own scratch and the kernel advances it, so a CUDA graph that
//    replays the launch sees the next epoch, not one baked in at capture.
//  - Release: a CTA's stores (to its own or a peer's memory) are ordered before its
//    arrival by fence.acq_rel.sys; the last CTA of a rank to arrive fences again (so
//    the other CTAs' stores, which it observed through the counter, come before what
//    follows) and writes the flags with relaxed system-scope stores.
//  - Acquire: readers poll with relaxed system-scope loads and, once the flag is up,
//    fence.acq_rel.sys; __syncthreads() then makes the data visible to the whole CTA.
//    (PTX's fence-fence synchronisation: a release fence, a strong write observed by a
//    strong read, an acquire fence. fence.acq_rel is lighter than the sequentially
//    consistent fence of __threadfence_system(), which nothing here needs.) A launch that
//    holds every rank (a loopback world, one GPU) fences at .gpu scope instead (fenceAcqRel).
//  - Every wait is bounded: every waiting thread checks, about once a millisecond
//    (kGuardCheckNs), the communicator's abort word (host-mapped, set by tacoCommAbort
//    from any thread), the rank's failed word (another CTA of this rank gave up) and
//    the time waited (TACO_WAIT_TIMEOUT_S). Not every few hundred polls: the abort word
//    is host memory, a read crosses PCIe, and with the waiters of a long launch reading
//    it that often a barrier took 0.6-1.15 ms, 7 us after the change (docs/results.md,
//    "The barriers of long launches"). NCCL likewise reads its abort flag only once per
//    many spins. On failure the CTA records why in the host-mapped status
//    word and returns; it never traps, so the CUDA context stays usable.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "coll/peer_plan.h"

namespace taco {
namespace peer {

// Status codes written to the host-mapped status word (0: none).
constexpr int kStatusTimeout = 1;
constexpr int kStatusAborted = 2;

// How often a waiting thread checks its WaitGuard, and how many polls between reads of the clock.
constexpr uint64_t kGuardCheckNs = 1000000;
constexpr uint32_t kPollsPerClockRead = 32;

__device__ __forceinline__ uint32_t loadRelaxed(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void storeRelaxed(uint32_t* p, uint32_t v) {
  asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
// The barrier's fences. Where every rank runs in this launch (a loopback world: its ranks
// are CTA groups of one kernel on one GPU) the .gpu scope covers every reader and writer
// and costs less than .sys, which ranks on other GPUs or in other processes need.
__device__ __forceinline__ void fenceAcqRel(bool oneGpu) {
  if (oneGpu) asm volatile("fence.acq_rel.gpu;" ::: "memory");
  else asm volatile("fence.acq_rel.sys;" ::: "memory");
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
  return reinterpret_cast<uint32_t*>(scratch + kFlagsOffset + ((size_t)phase * kMaxPeerRanks + src) * kPeerLine);
}

// What a wait needs to give up cleanly.
struct WaitGuard {
  const int* abortWord;  // host-mapped: set by tacoCommAbort
  int* statusWord;       // host-mapped: why this communicator's kernels gave up
  uint32_t* failedWord;  // this rank's scratch: a CTA of this rank gave up
  uint64_t timeoutNs;
  bool oneGpu;           // fences of .gpu scope suffice (fenceAcqRel)
};

__device__ __forceinline__ void giveUp(const WaitGuard& g, int why) {
  *reinterpret_cast<volatile int*>(g.statusWord) = why;
  atomicExch(g.failedWord, 1u);
}

__device__ __forceinline__ bool failed(const WaitGuard& g) {
  return *reinterpret_cast<volatile uint32_t*>(g.failedWord) != 0;
}

// Waits until *flag >= target (wrap-safe), then acquires. False when aborted, timed out or
// another CTA of this rank failed.
__device__ __forceinline__ bool waitFlag(const uint32_t* flag, uint32_t target, const WaitGuard& g) {
  auto up = [&] { return (int32_t)(loadRelaxed(flag) - target) >= 0; };
  if (!up()) {
    const uint64_t start = globalTimerNs();
    uint64_t nextCheck = start + kGuardCheckNs;
    for (uint32_t spin = 1;; ++spin) {
      if (up()) break;
      if (spin % kPollsPerClockRead != 0) continue;
      const uint64_t now = globalTimerNs();
      if (now < nextCheck) continue;
      nextCheck = now + kGuardCheckNs;
      if (*reinterpret_cast<const volatile int*>(g.abortWord) != 0) {
        giveUp(g, kStatusAborted);
        return false;
      }
      if (failed(g)) return false;
      if (now - start > g.timeoutNs) {
        giveUp(g, kStatusTimeout);
        return false;
      }
    }
  }
  fenceAcqRel(g.oneGpu);
  return true;
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

// Zeroes control lines [first, first + n) of a rank's scratch (the tile counters of a phase whose
// CTAs have all passed it: coll/peer_plan.h, kCtlClaims).
__device__ __forceinline__ void resetLines(char* scratch, size_t first, int n) {
  for (int i = 0; i < n; ++i) *reinterpret_cast<volatile uint32_t*>(controlWord(scratch, first + i)) = 0;
}

// Every thread of the CTA calls it after its stores for a phase. The last of rank `rank`'s
// `ctas` CTAs to arrive (counted in control line `counterLine` of the rank's scratch) sets flag
// `phase` of `rank` to `value` in the scratch of every rank j < P except `skip` (-1: none), after
// zeroing the phase's tile counters (control lines [claims, claims + nClaims): every claim of
// every CTA came before its arrival). A rank of one CTA (small messages) needs no count: its one
// fence releases the CTA's stores (made visible to thread 0 by the barrier) with the flags.
__device__ __forceinline__ void ctaArrive(char* const* base, int P, int skip, int rank, int phase, int ctas,
                                          uint32_t value, bool oneGpu, size_t counterLine, size_t claims = 0,
                                          int nClaims = 0) {
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t* counter = controlWord(base[rank], counterLine);
    fenceAcqRel(oneGpu);  // release: this CTA's stores, then its count (or its flags)
    if (ctas > 1) {
      if (atomicAdd(counter, 1u) != (uint32_t)ctas - 1) return;  // not the last CTA
      *reinterpret_cast<volatile uint32_t*>(counter) = 0;  // no CTA arrives here again before these flags
      fenceAcqRel(oneGpu);  // acquire the other CTAs' counts (and so their stores), release them with ours
    }
    resetLines(base[rank], claims, nClaims);
    for (int j = 0; j < P; ++j)
      if (j != skip) storeRelaxed(flagWord(base[j], phase, rank), value);
  }
}

// Programmatic dependent launch (sm_90; both are no-ops in a launch that did not ask for it,
// coll/allreduce_peer.cu). gridDependencyWait: the previous kernel in the stream has
// completed and its stores are visible. launchDependents: the next kernel in the stream may
// launch once every CTA of this one has called it (or exited); it still waits for this one
// wherever it calls gridDependencyWait.
__device__ __forceinline__ void gridDependencyWait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void launchDependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Every thread of the CTA calls it last: the rank's last CTA zeroes the phase's tile counters
// (as ctaArrive) and sets the epoch to `next` (the next launch reads it; the kernel boundary
// orders the two, so a lone CTA needs no count).
__device__ __forceinline__ void ctaFinish(char* scratch, int ctas, uint32_t next, size_t claims = 0, int nClaims = 0) {
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t* finish = controlWord(scratch, kCtlFinish);
    if (ctas > 1) {
      __threadfence();
      if (atomicAdd(finish, 1u) != (uint32_t)ctas - 1) return;
      *reinterpret_cast<volatile uint32_t*>(finish) = 0;
      if (nClaims > 0) __threadfence();  // the other CTAs' claims (released with their counts) come first
    }
    resetLines(scratch, claims, nClaims);
    *reinterpret_cast<volatile uint32_t*>(controlWord(scratch, kCtlEpoch)) = next;
  }
}

}  // namespace peer
}  // namespace taco
