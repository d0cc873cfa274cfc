// Peer memory: every rank's scratch region mapped into this process, for the
// kernels that load and store peers' memory directly (fused two-shot and
// one-shot AllReduce; docs/design.md §5). A transport moves bytes
// between ranks; peer memory lets a kernel do it itself. It knows nothing about
// what the scratch holds: the layout (flags, epochs, data slots) is coll's.
//
// Routes, tried in this order when a communicator is created (docs/collectives.md):
//   loopback        every rank's scratch is one allocation on the one GPU;
//   nccl-symmetric  NCCL's own symmetric memory (NCCL >= 2.28, peer_memory_nccl.cc):
//                   ncclMemAlloc, a window registered with NCCL_WIN_COLL_SYMMETRIC, a device
//                   communicator, every peer's address from ncclGetLsaPointer;
//   cuda-ipc        a cudaMalloc'ed scratch per rank, its IPC handle exchanged through
//                   the communicator and opened by every peer on the same host;
//   none            ranks on several hosts, no P2P, or a failed check: the staged path.
// The NCCL and IPC routes end with a real write into every peer (P2P can be reported and
// not work) and every rank's verdict all-gathered, so all ranks have peer memory or none
// has. The route is logged at INFO; a route that cannot be opened or fails its check on
// ranks of one host is logged at WARN with the reason (NCCL's route closing where NCCL has
// no symmetric memory for these ranks is expected, and logged at INFO).
#pragma once
#include <cstddef>

#include "taco.h"

namespace taco {

class Transport;

// Most ranks a peer-memory communicator can have (kernel arguments hold one pointer per rank).
constexpr int kMaxPeerRanks = 16;

// A route's own resources (allocations, mappings, NCCL registrations), released by
// peerMemoryFree through the route's destructor.
struct PeerOwner {
  virtual ~PeerOwner() {}
};

struct PeerMemory {
  const char* route = "none";   // "loopback", "nccl-symmetric" or "cuda-ipc"
  int rank = 0, nranks = 0;
  size_t bytes = 0;                   // scratch bytes per rank, the same on every rank
  // Ranks whose peer kernels share this rank's GPU, this one included: loopback, every rank;
  // cuda-ipc, the processes on this device (one for one GPU per rank). The kernels' launcher
  // divides the GPU among them (coll/allreduce_peer.cu).
  int ranksPerDevice = 1;
  char* base[kMaxPeerRanks] = {};     // every rank's scratch as mapped in this process; base[rank] is ours
  // Host-mapped pinned words, as device pointers (the kernel polls / writes them) and
  // host pointers (tacoCommAbort sets abort; tacoCommGetAsyncError reads status).
  int* abortDev = nullptr;
  volatile int* abortHost = nullptr;
  int* statusDev = nullptr;
  volatile int* statusHost = nullptr;
  int faultSkipRank = -1;  // TACO_FAULT_SKIP_RANK when the memory was created
  PeerOwner* owner = nullptr;  // route-specific state, released by peerMemoryFree
};

// Loopback: one PeerMemory per rank of an n-rank world, sharing one allocation of n * bytes
// (zeroed) and one abort / status pair (aborting any rank aborts the world's kernels).
tacoResult_t peerMemoryCreateLoopback(int nranks, size_t bytes, PeerMemory** out);

// NCCL symmetric memory over an NCCL transport (collective: every rank calls it), with
// device-communicator barriers for `lsaBarriers` CTAs. Returns tacoSuccess with
// *out == nullptr when the route is closed (which step refused is logged). Runs at
// communicator creation only, never inside a collective or a graph capture.
tacoResult_t peerMemoryCreateNcclSymmetric(Transport* t, size_t bytes, int lsaBarriers, PeerMemory** out);

// CUDA IPC over a communicator's transport (collective: every rank calls it). Returns
// tacoSuccess with *out == nullptr when the route is closed (the reason is logged).
tacoResult_t peerMemoryCreateIpc(Transport* t, size_t bytes, PeerMemory** out);

// Collective: how many ranks share this rank's host (by host name), whether all of them do (the
// same answer on every rank), and, where the pointers are not null, whether this rank is the
// lowest of its host and the most ranks on one host (the same on every rank).
tacoResult_t peerHostLayout(Transport* t, int* ranksOnThisHost, bool* oneHost, bool* firstOnHost = nullptr,
                            int* mostOnOneHost = nullptr);

// Unmaps / frees. Safe on nullptr. Waits for nothing: the caller has synchronised. The
// nccl-symmetric route deregisters from its NCCL communicator: free before the transport
// is finalized or aborted.
void peerMemoryFree(PeerMemory* pm);

}  // namespace taco
