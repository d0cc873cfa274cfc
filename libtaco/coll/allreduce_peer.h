// The peer-memory AllReduce algorithms (fused two-shot, one-shot, raw one-shot):
// the schedule builder, the executor's hook, and the kernel launcher (coll/allreduce_peer.cu;
// the kernels are coll/device/peer_kernels.cuh). docs/collectives.md, "Peer memory and the
// fused kernels".
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "codec/device/args.h"
#include "coll/coll.h"
#include "coll/peer_plan.h"
#include "coll/peer_timeline.h"

namespace taco {

// One launch (one chunk, one epoch) of a peer-memory AllReduce, passed by value.
struct PeerLaunch {
  int algo;          // tacoAlgoFused, tacoAlgoOneShot, tacoAlgoOneShotRaw
  int P;             // ranks of the communicator
  int nLocal;        // ranks this launch drives (loopback: P; otherwise 1)
  int ranksPerDevice;  // ranks whose kernels share this GPU, these nLocal included (PeerMemory)
  int ctasPerRank;   // set by the launcher
  int localRank[kPeerMaxRanks];
  const void* send[kPeerMaxRanks];  // per local rank
  void* recv[kPeerMaxRanks];
  char* base[kPeerMaxRanks];        // every rank's scratch, as mapped in this process
  const int* abortWord;
  int* statusWord;
  uint64_t timeoutNs;
  int skipRank;      // TACO_FAULT_SKIP_RANK (-1: none)
  size_t halfBytes, slotBytes;
  size_t pieceOff[kPeerMaxRanks];   // fused: piece j of this chunk; one-shot: [0] = the chunk
  dev::PieceWire wire[kPeerMaxRanks];
  dev::Args proto;                  // the codec's constants
  // TACO_PEER_TIMELINE: timelineRows rows of kTimelineSlots, one per CTA (coll/peer_timeline.h),
  // or null (off: each event is a branch on it, nothing more).
  uint64_t* timeline;
  int timelineRows;
};

// Builds and submits a peer-memory AllReduce (algo chosen by allReduceAlgo()).
tacoResult_t allReducePeer(tacoComm* c, const CollArgs& a, int algo);

// Executor hook: the same kStepPeer step of every rank driven from this thread (one
// for NCCL, every rank of a loopback world).
tacoResult_t runPeerSteps(const std::vector<tacoComm*>& comms, const std::vector<const Step*>& steps);

// Creates the communicator's peer memory where a route is open (none is not an error).
tacoResult_t peerMemorySetup(tacoComm** comms, int n, bool loopback);

// Checks the abort and status words before a call: an error once a kernel gave up.
tacoResult_t peerCheckHealthy(tacoComm* c, const char* op);

// True when the peer kernels support this codec (block codecs); raw one-shot takes any.
bool peerCodecSupported(tacoCodec_t codec);

// Kernel side (allreduce_peer.cu launches, coll/device/peer_kernels.cuh holds the kernels).
using PeerKernel = void (*)(const PeerLaunch);
// The kernel for (algo, code format, rotated256 layout) and element type T; nullptr if
// none. Instantiated for float, __half and __nv_bfloat16 in coll/allreduce_peer_kernels_*.cu.
template <typename T>
PeerKernel peerKernelFor(int algo, int fmt, bool rot);
void peerLaunchInit(PeerLaunch& L, tacoCodec_t codec, tacoDataType_t dtype);
// The most CTAs one rank's launch can have on the current device (the grid NCCL's LSA
// barriers are reserved for).
int peerMaxCtasPerRank();
cudaError_t launchPeerAllReduce(const PeerLaunch& L, size_t threadsWanted, tacoDataType_t dtype,
                                cudaStream_t stream);

}  // namespace taco
