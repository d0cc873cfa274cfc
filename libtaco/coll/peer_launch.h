// What the host side of the peer-memory AllReduce (coll/allreduce_peer.cu) hands its kernels
// (coll/device/peer_kernels.cuh): one launch's arguments, and the kernels as pointers. The
// device code includes this header and nothing of the host's communicator or schedule, so
// that a change to those does not recompile the kernels.
#pragma once
#include <cstddef>
#include <cstdint>

#include "codec/device/args.h"
#include "coll/peer_plan.h"
#include "coll/peer_timeline.h"

namespace taco {

// One launch of a peer-memory AllReduce, passed by value: chunk `chunk` of the call
// (coll/peer_plan.h), an epoch of its own. Shard j's piece in chunk c starts at
// shardOff[j] + c * chunkElems and is chunkElems long (wire `full`), but for the shard's
// last, shorter piece (wire tail[j]) and the empty ones after it.
struct PeerLaunch {
  int algo;          // tacoAlgoFused, tacoAlgoOneShot, tacoAlgoOneShotRaw
  int P;             // ranks of the communicator
  int nLocal;        // ranks this launch drives (loopback: P; otherwise 1)
  int ranksPerDevice;  // ranks whose kernels share this GPU, these nLocal included (PeerMemory)
  int ctasPerRank;   // set by the launcher
  int chunk;         // the chunk of the call this launch runs (its epoch: peerChunkEpoch)
  int nChunks;       // the call's chunks (its last one advances the epoch word: peerNextEpoch)
  int oneGpu;        // every rank is in this launch (loopback): .gpu-scope fences (coll/device/peer_sync.cuh)
  int interleave;    // the fused two-shot's chunks launch interleaved (coll/device/peer_kernels.cuh)
  int localRank[kMaxPeerRanks];
  const void* send[kMaxPeerRanks];  // per local rank
  void* recv[kMaxPeerRanks];
  char* base[kMaxPeerRanks];        // every rank's scratch, as mapped in this process
  const int* abortWord;
  int* statusWord;
  uint64_t timeoutNs;
  int skipRank;      // TACO_FAULT_SKIP_RANK (-1: none)
  size_t halfBytes, slotBytes;
  size_t chunkElems;                // elements of a full piece
  size_t shardOff[kMaxPeerRanks];   // fused: the P shards of the buffer; one-shot: [0] = the buffer
  size_t shardLen[kMaxPeerRanks];
  dev::PieceWire full;              // the wire of a piece of chunkElems elements
  dev::PieceWire tail[kMaxPeerRanks];  // the wire of shard j's last, shorter piece (if any)
  dev::Args proto;                  // the codec's constants
  // TACO_PEER_TIMELINE: timelineRows rows of kTimelineSlots, one per CTA (coll/peer_timeline.h),
  // or null (off: each event is a branch on it, nothing more).
  uint64_t* timeline;
  int timelineRows;
};

#ifdef __CUDACC__
#define TACO_PEER_HD __host__ __device__ __forceinline__
#else
#define TACO_PEER_HD inline
#endif

// Shard j's piece in chunk c: its first element, its length (0: empty), and which of the
// launch's wires it has (kPieceEmpty, kPieceFull: `full`, kPieceTail: tail[j]).
enum PeerPieceWire { kPieceEmpty = 0, kPieceFull = 1, kPieceTail = 2 };
TACO_PEER_HD size_t peerPieceOff(const PeerLaunch& L, int j, int c) {
  return L.shardOff[j] + (size_t)c * L.chunkElems;
}
TACO_PEER_HD size_t peerPieceLen(const PeerLaunch& L, int j, int c) {
  const size_t start = (size_t)c * L.chunkElems;
  if (start >= L.shardLen[j]) return 0;
  const size_t left = L.shardLen[j] - start;
  return left < L.chunkElems ? left : L.chunkElems;
}
TACO_PEER_HD int peerPieceWireOf(const PeerLaunch& L, int j, int c) {
  const size_t n = peerPieceLen(L, j, c);
  return n == 0 ? kPieceEmpty : n == L.chunkElems ? kPieceFull : kPieceTail;
}

// A call's epochs. Each rank's epoch word holds E0, the epoch of its next call's first chunk:
// chunk k of the call runs epoch E0 + k, and the call's last kernel sets the word to
// E0 + nChunks (an earlier chunk's last kernel stores E0 again), so no epoch is skipped and the
// halves of the scratch alternate from call to call as from chunk to chunk. Every kernel of the
// call reads the word before that last store: the fused scatter of chunk k >= 1, which starts
// before chunk k - 1's gather has ended (coll/device/peer_kernels.cuh), reads E0 as every
// other kernel of the call does, and the last gather stores only after the reduce before it has
// ended (which the scatter before it had awaited).
TACO_PEER_HD uint32_t peerChunkEpoch(uint32_t word, int chunk) { return word + (uint32_t)chunk; }
TACO_PEER_HD uint32_t peerNextEpoch(uint32_t epoch, int chunk, int nChunks) {
  const uint32_t e0 = epoch - (uint32_t)chunk;
  return chunk == nChunks - 1 ? e0 + (uint32_t)nChunks : e0;
}

// The wire of a piece of n elements (all zeros for n = 0: the kernels skip it).
dev::PieceWire peerPieceWire(tacoCodec_t codec, size_t n, tacoDataType_t dtype);

// Fills L's chunk geometry for the plan of a call of `count` elements (fused: the P shards;
// one-shot: the buffer as shard 0); returns the elements of the call's largest piece.
size_t peerLaunchGeometry(PeerLaunch& L, const PeerPlan& plan, size_t count, tacoDataType_t dtype);

// The fused two-shot's phases (coll/device/peer_kernels.cuh: A, B, C), a launch each.
enum FusedPhase { kFusedScatter = 0, kFusedReduce = 1, kFusedGather = 2, kFusedPhases = 3 };

using PeerKernel = void (*)(const PeerLaunch);
// The kernel of element type T and code format FMT for (algo, rotated256 layout, the fused
// two-shot's phase: kFused*, ignored by the one-shots; claim: the fused two-shot's claimed tile
// order where the format has it); FMT kFmtRaw holds the raw one-shot. nullptr if none.
// Instantiated per (T, FMT) in the translation units that CMakeLists.txt makes of
// coll/peer_kernels.cu.in.
template <typename T, int FMT>
PeerKernel peerKernelFor(int algo, bool rot, int phase, bool claim);

// The most CTAs one rank's launch can have on the current device (the grid NCCL's LSA
// barriers are reserved for; coll/allreduce_peer.cu).
int peerMaxCtasPerRank();

}  // namespace taco
