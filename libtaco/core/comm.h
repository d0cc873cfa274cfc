// The communicator object behind tacoComm_t: one rank of a group, its
// transport, its resolved configuration, its streams, events and workspace.
// Created and destroyed by coll/comm_init.cc; the fields are plain data so
// every layer above core can read them.
#pragma once
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "taco.h"

namespace taco {
class Transport;   // transport/transport.h
struct PeerMemory;  // transport/peer_memory.h
struct PeerTimelineBuffer;  // coll/peer_timeline_buffer.h

// tacoComm::magic of a communicator between creation and destroy, and the
// value it is poisoned with before its memory is freed.
constexpr uint64_t kCommMagicLive = 0x74616330636f6d6dull;  // "tac0comm"
constexpr uint64_t kCommMagicDead = 0xdeadc0dedeadc0deull;
}

struct tacoComm {
  // kCommMagicLive while the communicator exists (set by commCreate, poisoned by
  // commDestroy): the entry points reject a freed or foreign handle (best effort,
  // since freed memory may be reused). First, so a foreign pointer is read as
  // little as possible.
  uint64_t magic = 0;
  int rank = 0;
  int nranks = 1;
  int device = 0;
  taco::Transport* transport = nullptr;
  // Every rank's scratch mapped into this process (fused and one-shot AllReduce), or null.
  taco::PeerMemory* peer = nullptr;
  cudaEvent_t peerEvent = nullptr;  // joins loopback ranks' streams around a peer kernel
  taco::PeerTimelineBuffer* peerTimeline = nullptr;  // TACO_PEER_TIMELINE, or null

  // Resolved configuration (every field defined); config.codec points into codecSpec.
  tacoConfig_t config;
  std::string codecSpec;
  tacoCodec_t codec = {0, 0};
  bool compressed = false;  // codec != none and the compressed schedules can run on this many ranks

  // Chunk pipeline: `depth` streams forked from and joined back into the user's stream.
  int depth = 0;
  std::vector<cudaStream_t> streams;
  cudaEvent_t forkEvent = nullptr;
  std::vector<cudaEvent_t> joinEvents;

  // Workspace of the compressed collectives, laid out by coll/workspace.h.
  char* workspace = nullptr;
  size_t workspaceBytes = 0;
  size_t pieceCap = 0;

  // First asynchronous failure seen on the device (tacoCommGetAsyncError).
  tacoResult_t asyncError = tacoSuccess;
  // Why the peer kernels' epochs no longer agree without a kernel having given up: a call
  // whose launches failed after some of its kernels were enqueued, or, between processes,
  // any peer launch that failed ("" when none; coll/allreduce_peer.cc, peerMarkBroken).
  std::string peerBroken;
  // Peer-kernel launches tried so far (TACO_FAULT_PEER_LAUNCH counts them; a loopback world's
  // on its first rank), and the one that fails (-1: none), read when the communicator's peer
  // memory is created.
  long peerLaunches = 0;
  long faultPeerLaunch = -1;

  int pendingOps = 0;  // collectives queued in an open group
  std::string lastError;  // last failure of an operation on this communicator

  // The host thread using the communicator (its commThreadToken()), 0 when none: taken by
  // every entry point that enqueues work or changes it, for the call, and kept from a
  // collective queued in an open group to that group's tacoGroupEnd. A second thread is
  // refused (tacoInvalidUsage) instead of racing on the streams, the workspace and the
  // transport (NCCL takes one call at a time per communicator too).
  std::atomic<uintptr_t> user{0};
  // The hold of `user` was kept past a call for the collectives it queued in an open group, and
  // that group's end gives it back (written by the holding thread only).
  bool heldForGroup = false;
};

namespace taco {
// True when `c` is a communicator that was created and not yet destroyed.
bool commIsLive(const tacoComm* c);
// True when the communicator has every peer's scratch mapped (fused and one-shot AllReduce).
bool commHasPeerMemory(const tacoComm* c);
// Records the thread's last error (taco::lastError()) on the communicator (when live).
void commRecordError(tacoComm* c);
// The communicator's last error, or "" (also for NULL or a communicator that is not live).
const char* commLastError(const tacoComm* c);

// A value unique to the calling host thread while it runs (never 0).
uintptr_t commThreadToken();
// Takes the communicator for the calling thread, for entry point `op` (e.g. "tacoAllReduce"):
// tacoInvalidUsage naming it when another thread has it. *taken: this call took it (it was
// free), and commRelease must give it back; false when the thread had it already (from a
// collective queued in its open group).
tacoResult_t commAcquire(tacoComm* c, const char* op, bool* taken);
// Gives the communicator back, unless collectives of it are queued in the thread's open group
// (tacoGroupEnd gives it back then: commReleaseAfterGroup, which gives back only a hold kept so).
void commRelease(tacoComm* c, bool taken);
void commReleaseAfterGroup(tacoComm* c);
}  // namespace taco
