// A communicator's peer memory at another size (docs/tuning.md, "The AllReduce table"): the
// tuner measures the fused two-shot with a scratch kLargeChunkFactor times larger, and a
// communicator whose table prefers it keeps that one. The new scratch comes from the route the
// communicator's peer memory already took, so creating it is collective, like at creation (never
// inside a call or a graph capture).
#pragma once
#include <cstddef>
#include <vector>

#include "taco.h"

struct tacoComm;

namespace taco {

struct PeerMemory;

// Peer memory with a scratch for `chunkBytes` (peerScratchBytes) for `comms`: every rank of a
// loopback world in rank order, or one NCCL rank (then collective over its communicator). out[i]
// for comms[i]; all null when the route refused it on any rank (not an error: logged).
tacoResult_t peerMemoryCreateSized(const std::vector<tacoComm*>& comms, size_t chunkBytes,
                                   std::vector<PeerMemory*>* out);

// Puts `pm` in place of c's peer memory and returns the old one (the caller frees it, or puts it
// back). c's streams must be idle: a peer kernel still running would lose its scratch. The
// communicator's workspace bytes follow.
PeerMemory* peerMemorySwap(tacoComm* c, PeerMemory* pm);

// The scratch bytes per rank of c's peer memory (0 without any).
size_t peerScratchOf(const tacoComm* c);

}  // namespace taco
