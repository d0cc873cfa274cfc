// The peer-memory AllReduce algorithms (fused two-shot, one-shot, raw one-shot):
// the schedule builder, the executor's hook, and the kernel launcher (coll/allreduce_peer.cu;
// the kernels are coll/device/peer_kernels.cuh). docs/collectives.md, "Peer memory and the
// fused kernels".
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "coll/coll.h"
#include "coll/peer_launch.h"

namespace taco {

// Builds and submits a peer-memory AllReduce (algo chosen by allReduceAlgo()).
tacoResult_t allReducePeer(tacoComm* c, const CollArgs& a, int algo);

// What the schedule's kStepLaunch steps run (a StepLaunch): the same step of every rank
// driven from this thread (one for NCCL, every rank of a loopback world).
tacoResult_t runPeerSteps(const std::vector<tacoComm*>& comms, const std::vector<const Step*>& steps);

// Creates the communicator's peer memory where a route is open (none is not an error).
tacoResult_t peerMemorySetup(tacoComm** comms, int n, bool loopback);

// Checks the abort and status words before a call: an error once a kernel gave up.
tacoResult_t peerCheckHealthy(tacoComm* c, const char* op);

// True when the peer kernels support this codec (block codecs); raw one-shot takes any.
bool peerCodecSupported(tacoCodec_t codec);

// How the fused two-shot's phase kernels launch (TACO_PEER_EARLY_LAUNCH, sm_90), for a launch
// that drives nLocal of the ranksPerDevice ranks on its GPU: kPeerLaunchEarly or
// kPeerLaunchInterleaved only when it drives them all (coll/device/peer_kernels.cuh says why).
enum PeerLaunchMode { kPeerLaunchAfter = 0, kPeerLaunchEarly = 1, kPeerLaunchInterleaved = 2 };
int peerLaunchMode(int ranksPerDevice, int nLocal);

// The same for communicator c's fused calls, driven with nLocal - 1 others from one thread
// (a loopback world: all its ranks); kPeerLaunchAfter without peer memory.
int peerCommLaunchMode(const tacoComm* c, int nLocal);

// Whether a launch of `algo` for P ranks, data of `dtype` and a codec of these constants
// (PeerLaunch::proto) takes its tiles in the claimed order (coll/device/peer_kernels.cuh;
// TACO_PEER_CLAIM_MIN_RANKS).
bool peerClaimsTiles(const dev::Args& proto, int algo, int P, tacoDataType_t dtype);

void peerLaunchInit(PeerLaunch& L, tacoCodec_t codec, tacoDataType_t dtype);
// Launches chunk L.chunk's kernels (the fused two-shot: one per phase) and counts into
// *launched those it enqueued before any failure. `refuse` (testing, TACO_FAULT_PEER_LAUNCH):
// the index of the kernel that fails as one the driver refuses, -1 for none.
cudaError_t launchPeerAllReduce(const PeerLaunch& L, size_t threadsWanted, tacoDataType_t dtype,
                                cudaStream_t stream, int refuse, int* launched);

}  // namespace taco
