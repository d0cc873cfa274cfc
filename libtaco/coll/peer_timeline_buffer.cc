// A communicator's peer-kernel timeline buffer (coll/peer_timeline_buffer.h).
#include "coll/peer_timeline_buffer.h"

#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include "coll/peer_launch.h"  // peerMaxCtasPerRank
#include "coll/peer_timeline.h"
#include "core/check.h"
#include "core/comm.h"
#include "core/params.h"

namespace taco {
namespace {

// Copies the rows after the work on `stream` and prints the summary of the last launch.
cudaError_t printLastLaunch(const tacoComm* c, cudaStream_t stream, const char* when) {
  const PeerTimelineBuffer* b = c->peerTimeline;
  std::vector<uint64_t> rows((size_t)b->nRows * kTimelineSlots);
  cudaError_t e = cudaMemcpyAsync(rows.data(), b->rows, rows.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost,
                                  stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) return e;
  char who[64];
  snprintf(who, sizeof(who), "rank %d/%d, %s", c->rank, c->nranks, when);
  std::string text = formatPeerTimeline(summarizePeerTimeline(rows.data(), b->nRows), who);
  if (envParams().peerTimelineCtas != 0) text += formatPeerTimelineCtas(rows.data(), b->nRows);
  fputs(text.c_str(), stderr);
  fflush(stderr);
  return cudaSuccess;
}

}  // namespace

tacoResult_t peerTimelineCreate(tacoComm* c) {
  const int every = envParams().peerTimeline;
  if (every == 0 || c->peer == nullptr || c->peerTimeline != nullptr) return tacoSuccess;
  PeerTimelineBuffer* b = new (std::nothrow) PeerTimelineBuffer();
  if (b == nullptr) return setError(tacoSystemError, "TACO_PEER_TIMELINE: out of host memory");
  b->nRows = peerMaxCtasPerRank();
  b->every = every > 1 ? every : 0;
  const size_t bytes = (size_t)b->nRows * kTimelineSlots * sizeof(uint64_t);
  cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&b->rows), bytes);
  if (e == cudaSuccess) e = cudaMemset(b->rows, 0, bytes);  // a row never written reads 0
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    cudaFree(b->rows);
    delete b;
    return setError(e == cudaErrorMemoryAllocation ? tacoOutOfMemory : tacoUnhandledCudaError,
                    "TACO_PEER_TIMELINE: the timeline's %zu bytes could not be allocated: '%s'", bytes,
                    cudaGetErrorString(e));
  }
  c->peerTimeline = b;
  TACO_INFO("rank %d/%d TACO_PEER_TIMELINE=%d: %d timeline rows (%zu bytes)", c->rank, c->nranks, every, b->nRows,
            bytes);
  return tacoSuccess;
}

tacoResult_t peerTimelineAfterLaunch(tacoComm* c, cudaStream_t stream) {
  PeerTimelineBuffer* b = c->peerTimeline;
  if (b == nullptr) return tacoSuccess;
  ++b->launches;
  if (b->every == 0 || b->launches % (uint64_t)b->every != 0) return tacoSuccess;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  TACO_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone) {
    if (!b->toldCapture)
      fprintf(stderr,
              "TACO TIMELINE rank %d/%d: TACO_PEER_TIMELINE=%d prints nothing during a CUDA graph capture; the "
              "last launch run is printed when the communicator is destroyed\n",
              c->rank, c->nranks, b->every);
    b->toldCapture = true;
    return tacoSuccess;
  }
  char when[48];
  snprintf(when, sizeof(when), "launch %llu", (unsigned long long)b->launches);
  TACO_CUDA_CHECK(printLastLaunch(c, stream, when));
  return tacoSuccess;
}

void peerTimelineReport(tacoComm* c) {
  if (c->peerTimeline == nullptr || c->peerTimeline->launches == 0 || c->streams.empty()) return;
  const cudaError_t e = printLastLaunch(c, c->streams[0], "at destroy");
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    TACO_WARN("TACO_PEER_TIMELINE: reading rank %d's timeline failed: '%s'", c->rank, cudaGetErrorString(e));
  }
}

void peerTimelineFree(tacoComm* c) {
  if (c->peerTimeline == nullptr) return;
  cudaFree(c->peerTimeline->rows);
  delete c->peerTimeline;
  c->peerTimeline = nullptr;
}

}  // namespace taco
