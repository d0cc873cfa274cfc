// A communicator's peer-kernel timeline (TACO_PEER_TIMELINE; the layout and the summary
// are coll/peer_timeline.h): the device rows the kernels write, allocated with the
// communicator's peer memory (never during a call or a graph capture), and the printing
// of the last launch's summary to stderr.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "taco.h"

namespace taco {

struct PeerTimelineBuffer {
  uint64_t* rows = nullptr;  // device: nRows rows of kTimelineSlots, zeroed once at creation
  int nRows = 0;             // a row per CTA of the device's largest peer launch (peerMaxCtasPerRank)
  int every = 0;             // print after every `every`-th launch (0: at destroy only)
  uint64_t launches = 0;     // launches issued (or captured) by this communicator
  bool toldCapture = false;  // the note that captured launches are not printed, given once
};

// When TACO_PEER_TIMELINE is set: the buffer of a communicator that has peer memory.
tacoResult_t peerTimelineCreate(tacoComm* c);

// After each peer launch on `stream` by this communicator: counts it, and every N-th
// (TACO_PEER_TIMELINE=N > 1) waits for the stream and prints the launch. That wait
// changes the timing between calls only, not inside the launch the timeline measures;
// during a graph capture nothing is printed.
tacoResult_t peerTimelineAfterLaunch(tacoComm* c, cudaStream_t stream);

// At destroy, the communicator's work finished: prints its last launch, if it launched any.
void peerTimelineReport(tacoComm* c);

// Frees the buffer. Safe without one.
void peerTimelineFree(tacoComm* c);

}  // namespace taco
