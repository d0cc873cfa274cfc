// The phase timeline of the peer-memory AllReduce kernels (TACO_PEER_TIMELINE, a
// diagnostic; docs/design.md §5): its layout, shared by the kernels
// (coll/device/peer_timeline.cuh) and the host, and the summary of one launch.
//
// Layout: one row of kTimelineSlots u64 per CTA of a launch, row blockIdx.x. Thread 0
// of the CTA writes %globaltimer (ns) into the row's event slots as it passes each
// point, and at the start a launch word saying which launch and rank wrote the row, so
// that the host needs nothing but the rows to find the last launch (also when a CUDA
// graph replayed it). Nothing is zeroed per call: an event a CTA did not reach in its
// last launch (a wait that gave up) holds an older time, earlier than the row's start.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#ifdef __CUDACC__
#define TACO_TIMELINE_HD __host__ __device__ __forceinline__
#else
#define TACO_TIMELINE_HD inline
#endif

namespace taco {

// Event slots of a row. Fused two-shot: every event. One-shot and raw one-shot: start,
// end of A (the compress), end of wait 0, end; the fused-only slots are left alone.
enum PeerTimelineEvent {
  kTimelineStart = 0,  // after the prologue (the rank's epoch read)
  kTimelineEndA = 1,   // thread 0's part of phase A (one-shot: the compress) done, before arrive 0
  kTimelineWait0 = 2,  // the wait for flag 0 of every rank over (not recorded when it gave up)
  kTimelineEndB = 3,   // fused: thread 0's part of phase B done, before arrive 1
  kTimelineWait1 = 4,  // fused: the wait for flag 1 over (not recorded when it gave up)
  kTimelineEnd = 5,    // the CTA's last step done (after its epoch count-in)
  kTimelineEvents = 6,
  kTimelineLaunchSlot = 6,  // not a time: timelineLaunchWord of the launch that wrote the row
  kTimelineSlots = 8,       // per row: 64 bytes, so that CTAs never share a 32-byte sector
};

// The launch word: which launch (algorithm, P, ranks in the launch, CTAs per rank) and
// which rank wrote a row. Never 0 (P >= 1), so a row never written reads 0.
TACO_TIMELINE_HD uint64_t timelineLaunchWord(int algo, int rank, int P, int nLocal, int ctasPerRank) {
  return (uint64_t)(algo & 0xff) | (uint64_t)(rank & 0xff) << 8 | (uint64_t)(P & 0xff) << 16 |
         (uint64_t)(nLocal & 0xff) << 24 | (uint64_t)(uint32_t)ctasPerRank << 32;
}

// Order statistics of one event over a rank's CTAs, in microseconds since the launch's
// earliest start; over the CTAs that reached it (reached of ctas).
struct TimelineEventStats {
  int reached = 0;
  double minUs = 0, medianUs = 0, maxUs = 0;
};

// phaseUs[e - 1]: the phase that ends at event e, from the event before it that the
// algorithm records (fused: A, wait0, B, wait1, C; one-shot: A (compress), wait0, C
// (decode) in [0], [1], [4]).
constexpr int kTimelinePhases = kTimelineEvents - 1;

struct TimelineRankStats {
  int rank = -1;  // from its rows' launch words; -1 when none of its CTAs ran (TACO_FAULT_SKIP_RANK)
  int ctas = 0;     // its CTAs in the launch
  int started = 0;  // of which ran (wrote their row)
  TimelineEventStats event[kTimelineEvents];
  // Medians over the CTAs that reached both ends of a phase of their own durations (not a
  // difference of medians), and of the total (end - start); -1: no CTA did, or not recorded.
  double phaseUs[kTimelinePhases] = {-1, -1, -1, -1, -1};
  double totalUs = -1;
  // The median of the total less the CTA's waits (its phases' sum), over the CTAs that reached
  // every event: what a rank's own work took, without waiting for the other ranks' and CTAs'.
  double workUs = -1;
};

struct TimelineSummary {
  bool found = false;  // false: no row holds a launch
  int algo = 0, P = 0, nLocal = 0, ctasPerRank = 0;
  double spanUs = 0;  // earliest start to latest end of the launch
  std::vector<TimelineRankStats> ranks;  // per CTA group of the launch (PeerLaunch::localRank order)
};

// The last launch found in `rows` (nRows rows of kTimelineSlots): the launch of the
// row that started last; its rows are 0 .. nLocal * ctasPerRank - 1.
TimelineSummary summarizePeerTimeline(const uint64_t* rows, int nRows);

// The summary as lines prefixed "TACO TIMELINE", each ending in '\n'; `who` names the
// communicator (e.g. "rank 0").
std::string formatPeerTimeline(const TimelineSummary& s, const char* who);

// Every CTA's row of the last launch in `rows` (as summarizePeerTimeline finds it): its rank and
// each event's time in us since the launch's earliest CTA start, as lines prefixed "TACO
// TIMELINE"; "" when no row holds a launch. (TACO_PEER_TIMELINE_CTAS: how the CTAs of a phase
// spread, and whether the slow ones are the same CTAs in every phase.)
std::string formatPeerTimelineCtas(const uint64_t* rows, int nRows);

}  // namespace taco
