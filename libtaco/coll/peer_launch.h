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

// One launch of a peer-memory AllReduce, passed by value: the whole call. The kernel loops
// over the call's chunks (coll/peer_plan.h), each an epoch of its own; shard j's piece in
// chunk c is [shardOff[j] + c * chunkElems, ...), chunkElems long (wire `full`) but for the
// shard's last, shorter piece (wire tail[j]) and the empty ones after it.
struct PeerLaunch {
  int algo;          // tacoAlgoFused, tacoAlgoOneShot, tacoAlgoOneShotRaw
  int P;             // ranks of the communicator
  int nLocal;        // ranks this launch drives (loopback: P; otherwise 1)
  int ranksPerDevice;  // ranks whose kernels share this GPU, these nLocal included (PeerMemory)
  int ctasPerRank;   // set by the launcher
  int nChunks;       // chunks of the call: epochs epoch .. epoch + nChunks - 1
  int oneGpu;        // every rank is in this launch (loopback): .gpu-scope fences (coll/device/peer_sync.cuh)
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

using PeerKernel = void (*)(const PeerLaunch);
// The kernel of element type T and code format FMT for (algo, rotated256 layout); FMT
// kFmtRaw holds the raw one-shot. nullptr if none. Instantiated per (T, FMT) in the
// translation units that CMakeLists.txt makes of coll/peer_kernels.cu.in.
template <typename T, int FMT>
PeerKernel peerKernelFor(int algo, bool rot);

// The most CTAs one rank's launch can have on the current device (the grid NCCL's LSA
// barriers are reserved for; coll/allreduce_peer.cu).
int peerMaxCtasPerRank();

}  // namespace taco
