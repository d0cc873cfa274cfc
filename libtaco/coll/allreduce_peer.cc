// Host side of the peer-memory AllReduce algorithms (coll/allreduce_peer.h): the
// schedule (fork, one kStepLaunch step for the whole call on pipeline stream 0, join: calls on
// one communicator run in issue order, as the epochs require), the launch of each
// step, and the creation of peer memory with the communicator.
#include "coll/allreduce_peer.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "coll/peer_timeline_buffer.h"
#include "codec/codec.h"
#include "codec/launch.h"
#include "core/check.h"
#include "core/dtype.h"
#include "core/params.h"
#include "transport/peer_memory.h"
#include "transport/transport.h"

namespace taco {

tacoResult_t commAsyncError(tacoComm* c) {
  if (c->asyncError == tacoSuccess && c->peer != nullptr && *c->peer->statusHost != 0) c->asyncError = tacoRemoteError;
  return c->asyncError;
}

tacoResult_t peerCheckHealthy(tacoComm* c, const char* op) {
  const PeerMemory* pm = c->peer;
  if (pm == nullptr) return tacoSuccess;
  if (*pm->abortHost != 0)
    return setError(tacoInvalidUsage, "%s: the communicator was aborted (tacoCommAbort); destroy it", op);
  if (!c->peerBroken.empty())
    return setError(c->asyncError, "%s: an earlier call's peer kernels were launched in part (%s); the ranks no "
                    "longer agree on their epochs: destroy the communicator", op, c->peerBroken.c_str());
  if (commAsyncError(c) != tacoSuccess)
    return setError(tacoRemoteError,
                    "%s: an earlier collective gave up waiting for a peer (%s); the ranks no longer agree "
                    "on their epochs: destroy the communicator",
                    op, *pm->statusHost == 2 ? "aborted" : "timed out after TACO_WAIT_TIMEOUT_S");
  return tacoSuccess;
}

int peerCommLaunchMode(const tacoComm* c, int nLocal) {
  // runPeerSteps's ranksPerDevice: at least the ranks of the launch
  return c->peer != nullptr ? peerLaunchMode(std::max(c->peer->ranksPerDevice, nLocal), nLocal) : kPeerLaunchAfter;
}

tacoResult_t allReducePeer(tacoComm* c, const CollArgs& a, int algo) {
  TACO_CHECK(peerCheckHealthy(c, "tacoAllReduce"));
  Schedule sched;
  sched.comm = c;
  sched.steps.reserve(3);
  sched.steps.push_back(stepFork(a.stream));
  Step s;  // one step for the whole call: runPeerSteps plans it once and launches its chunks
  s.kind = kStepLaunch;
  s.launch = runPeerSteps;
  s.stream = 0;
  s.in = a.sendbuff;
  s.y = a.recvbuff;
  s.count = a.count;
  s.dtype = a.dtype;
  s.algo = algo;
  sched.steps.push_back(std::move(s));
  sched.steps.push_back(stepJoin(a.stream));
  return submit(std::move(sched), "tacoAllReduce");
}

namespace {

// Threads the largest piece of a phase can keep busy (`largest`: its wire): a warp per tile
// of blocks, or a thread per 16 bytes.
size_t threadsWanted(const PeerPlan& p, const dev::PieceWire& largest, tacoDataType_t dtype) {
  if (p.codec.blockSize > 0) {
    const size_t groupsPerWarp = 32 * 32 / (size_t)p.codec.blockSize;  // 32 lanes, 32 elements each
    return (largest.nBlocks + groupsPerWarp - 1) / groupsPerWarp * 32;
  }
  return (largest.count * dtypeBytes(dtype) + 15) / 16;
}

// A call whose kernels were enqueued in part: they run and raise this rank's flags for their
// chunks, but the call's last kernel, the only one that advances the epoch word, never runs; the
// peers (of other processes) are left waiting for kernels that never come.
// A call of a process-per-rank world that enqueued nothing is no better: its peers' kernels of
// that call wait for this rank, whose next call would pair with them. Either way the ranks'
// epochs no longer agree, as after a timeout: every later peer call is refused, and the error is
// the communicator's asynchronous error. Only where one launch drives every rank (a loopback
// world) does a call that enqueued nothing leave the world consistent; and during a graph
// capture nothing enqueued ever runs (the failed launch invalidates the capture).
void peerMarkBroken(const std::vector<tacoComm*>& comms, const std::string& why) {
  for (tacoComm* c : comms) {
    if (!c->peerBroken.empty()) continue;
    c->peerBroken = why;
    if (c->asyncError == tacoSuccess) c->asyncError = tacoUnhandledCudaError;
  }
}

std::string chunkFailure(int algo, int chunk, int nChunks, cudaError_t e) {
  char buf[160];
  snprintf(buf, sizeof(buf), "%s, chunk %d of %d: '%s'", algoName(algo), chunk, nChunks, cudaGetErrorString(e));
  return buf;
}

}  // namespace

tacoResult_t runPeerSteps(const std::vector<tacoComm*>& comms, const std::vector<const Step*>& steps) {
  const size_t n = comms.size();
  tacoComm* c0 = comms[0];
  const Step& s0 = *steps[0];
  for (size_t i = 1; i < n; ++i)
    if (steps[i]->algo != s0.algo || steps[i]->count != s0.count || steps[i]->dtype != s0.dtype)
      return setError(tacoInvalidUsage,
                      "tacoAllReduce: ranks %d and %d called with different counts, dtypes or algorithms (%zu/%d vs "
                      "%zu/%d)",
                      c0->rank, comms[i]->rank, s0.count, (int)s0.dtype, steps[i]->count, (int)steps[i]->dtype);
  const PeerMemory* pm = c0->peer;
  if (pm == nullptr) return setError(tacoInternalError, "tacoAllReduce: peer step without peer memory");
  const PeerPlan plan = peerPlan(s0.algo, c0->codec, s0.count, s0.dtype, c0->nranks, pm->bytes);

  PeerLaunch L;
  memset(&L, 0, sizeof(L));
  L.algo = s0.algo;
  L.P = c0->nranks;
  L.nLocal = (int)n;
  L.oneGpu = L.nLocal == L.P;
  L.ranksPerDevice = std::max(pm->ranksPerDevice, L.nLocal);  // as peerCommLaunchMode
  for (size_t i = 0; i < n; ++i) {
    L.localRank[i] = comms[i]->rank;
    L.send[i] = steps[i]->in;
    L.recv[i] = steps[i]->y;
  }
  for (int q = 0; q < L.P; ++q) L.base[q] = pm->base[q];
  L.abortWord = pm->abortDev;
  L.statusWord = pm->statusDev;
  L.timeoutNs = (uint64_t)(envParams().waitTimeoutS * 1e9);
  L.skipRank = pm->faultSkipRank;
  L.halfBytes = peerHalfBytes(pm->bytes);
  L.slotBytes = peerSlotBytes(pm->bytes, L.P);
  if (c0->peerTimeline != nullptr) {  // TACO_PEER_TIMELINE: rank c0's rows record the whole launch
    L.timeline = c0->peerTimeline->rows;
    L.timelineRows = c0->peerTimeline->nRows;
  }
  // The chunk geometry (coll/peer_launch.h): the shards, the wire of a full piece and of
  // each shard's shorter last piece. One-shot: one shard, the whole buffer.
  if (plan.nChunks > (size_t)INT32_MAX)
    return setError(tacoInvalidArgument, "tacoAllReduce: count %zu takes %zu chunks of scratch, more than %d",
                    s0.count, plan.nChunks, INT32_MAX);
  const size_t largest = peerLaunchGeometry(L, plan, s0.count, s0.dtype);
  L.nChunks = (int)plan.nChunks;
  peerLaunchInit(L, plan.codec, s0.dtype);

  // Loopback: one launch for the whole world, on rank 0's stream, joined with the others'.
  cudaStream_t st = c0->streams[s0.stream];
  for (size_t i = 1; i < n; ++i) {
    TACO_CUDA_CHECK(cudaEventRecord(comms[i]->peerEvent, comms[i]->streams[steps[i]->stream]));
    TACO_CUDA_CHECK(cudaStreamWaitEvent(st, comms[i]->peerEvent, 0));
  }
  // A launch per chunk (coll/device/peer_kernels.cuh says why not one loop over them).
  const size_t threads = threadsWanted(plan, peerPieceWire(plan.codec, largest, s0.dtype), s0.dtype);
  int enqueued = 0;  // kernels of this call in the stream
  std::string broken;   // why the call failed after it began, for peerMarkBroken
  tacoResult_t res = tacoSuccess;
  for (int ch = 0; ch < (int)plan.nChunks && res == tacoSuccess; ++ch) {
    L.chunk = ch;
    // TACO_FAULT_PEER_LAUNCH: this chunk's launches before the refused one, or -1
    const long ahead = c0->faultPeerLaunch - c0->peerLaunches;
    const int refuse = ahead >= 0 && ahead <= INT32_MAX ? (int)ahead : -1;
    int launched = 0;
    const cudaError_t e = launchPeerAllReduce(L, threads, s0.dtype, st, refuse, &launched);
    c0->peerLaunches += launched + (e != cudaSuccess ? 1 : 0);  // the launches tried
    enqueued += launched;
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      broken = chunkFailure(s0.algo, ch, (int)plan.nChunks, e);
      res = setError(tacoUnhandledCudaError, "tacoAllReduce: launching the %s kernel of chunk %d of %zu: '%s'",
                     algoName(s0.algo), ch, plan.nChunks, cudaGetErrorString(e));
    } else if ((res = peerTimelineAfterLaunch(c0, st)) != tacoSuccess) {
      broken = "TACO_PEER_TIMELINE after chunk " + std::to_string(ch);
    }
  }
  // The other ranks' streams wait for the launches, on failure too: what was enqueued must be
  // ordered before their next work and the join into the user's streams (coll/executor.cc).
  if (n > 1) {
    cudaError_t e = cudaEventRecord(c0->peerEvent, st);
    for (size_t i = 1; i < n && e == cudaSuccess; ++i)
      e = cudaStreamWaitEvent(comms[i]->streams[steps[i]->stream], c0->peerEvent, 0);
    if (e != cudaSuccess && res == tacoSuccess) TACO_CUDA_CHECK(e);
    if (e != cudaSuccess) (void)cudaGetLastError();
  }
  if (res == tacoSuccess) return tacoSuccess;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  const bool capturing = cudaStreamIsCapturing(st, &capture) != cudaSuccess || capture != cudaStreamCaptureStatusNone;
  (void)cudaGetLastError();
  if ((enqueued > 0 || !L.oneGpu) && !capturing) {
    peerMarkBroken(comms, broken);
    const std::string first = lastError();  // setError writes the buffer lastError() reads
    return setError(res, "%s; %s: destroy the communicator", first.c_str(),
                    enqueued > 0 ? "the call ran in part" : "the other processes' ranks launched theirs");
  }
  return res;
}

// Which routes are tried (TACO_PEER_MEMORY, docs/collectives.md): loopback worlds take
// the loopback route unless peer memory is off. NCCL communicators whose ranks share a host
// try nccl-symmetric, then cuda-ipc (the default, `1`); ranks on several hosts get none;
// `loopback` gives NCCL communicators none; `nccl` and `ipc` try that route alone, to test
// and measure each. The fused path needs 2..kMaxPeerRanks ranks, but a forced nccl route
// runs its whole chain at one rank too (the only case a one-GPU machine has), logs the
// verdict and releases what it got. A route that is refused leaves the communicator
// without peer memory (the staged path), never an error.
tacoResult_t peerMemorySetup(tacoComm** comms, int n, bool loopback) {
  const int mode = envParams().peerMemory;
  tacoComm* c0 = comms[0];
  const int P = c0->nranks;
  if (mode == kPeerMemoryOff || P > kMaxPeerRanks) return tacoSuccess;
  if (!loopback && mode == kPeerMemoryLoopback) {
    TACO_INFO("peer memory: off for NCCL communicators (TACO_PEER_MEMORY=loopback)");
    return tacoSuccess;
  }
  const bool forcedNccl = !loopback && mode == kPeerMemoryNccl;
  if (P < 2 && !forcedNccl) return tacoSuccess;
  if (!loopback && mode == kPeerMemoryOn) {
    // By default only ranks of one host: between hosts there is nothing to map.
    int here = 0;
    bool oneHost = false;
    TACO_CHECK(peerHostLayout(c0->transport, &here, &oneHost));
    if (!oneHost) {
      TACO_INFO("peer memory: none (rank %d shares its host with %d of the %d ranks): the staged path", c0->rank,
                here - 1, P);
      return tacoSuccess;
    }
  }
  const size_t bytes = peerScratchBytes(c0->config.chunkBytes, P, c0->codec);
  std::vector<PeerMemory*> pms(n, nullptr);
  if (loopback) {
    TACO_CHECK(peerMemoryCreateLoopback(n, bytes, pms.data()));
  } else {
    // Registration with NCCL happens here, at creation, never in a call or a graph capture.
    if (mode == kPeerMemoryOn || mode == kPeerMemoryNccl)
      TACO_CHECK(peerMemoryCreateNcclSymmetric(c0->transport, bytes, peerMaxCtasPerRank(), &pms[0]));
    if (pms[0] != nullptr && P < 2) {
      TACO_INFO("peer memory: %s works at one rank; released: the fused path needs 2..%d ranks", pms[0]->route,
                kMaxPeerRanks);
      peerMemoryFree(pms[0]);
      return tacoSuccess;
    }
    if (P < 2) return tacoSuccess;
    if (pms[0] == nullptr && (mode == kPeerMemoryOn || mode == kPeerMemoryIpc))
      TACO_CHECK(peerMemoryCreateIpc(c0->transport, bytes, &pms[0]));
    if (pms[0] == nullptr && mode == kPeerMemoryOn)
      TACO_WARN("peer memory: none for these %d ranks of one host: every route was refused (the reasons above; "
                "TACO_DEBUG=INFO shows each step): the staged path. TACO_PEER_MEMORY=0 turns peer memory off",
                P);
    else if (pms[0] == nullptr)
      TACO_INFO("peer memory: none for this NCCL communicator: the staged path");
  }
  const int skip = faultSkipRank();
  if (skip >= 0) TACO_WARN("TACO_FAULT_SKIP_RANK=%d: rank %d's peer kernels will skip every call (testing)", skip, skip);
  const int faultLaunch = faultPeerLaunch();
  if (faultLaunch >= 0)
    TACO_WARN("TACO_FAULT_PEER_LAUNCH=%d: the communicator's peer-kernel launch %d will fail (testing)", faultLaunch,
              faultLaunch);
  for (int i = 0; i < n; ++i) {
    if (pms[i] == nullptr) continue;
    pms[i]->faultSkipRank = skip;
    comms[i]->faultPeerLaunch = faultLaunch;
    comms[i]->peer = pms[i];
    comms[i]->workspaceBytes += bytes;
    TACO_CUDA_CHECK(cudaEventCreateWithFlags(&comms[i]->peerEvent, cudaEventDisableTiming));
    TACO_CHECK(peerTimelineCreate(comms[i]));
  }
  if (pms[0] != nullptr) {
    std::string claimed;  // the types whose fused tiles are claimed (TACO_PEER_CLAIM_MIN_RANKS)
    for (tacoDataType_t t : {tacoFloat32, tacoFloat16, tacoBfloat16})
      if (peerClaimsTiles(makeArgs(c0->codec, 0, t), tacoAlgoFused, P, t))
        claimed += std::string(claimed.empty() ? " for " : ", ") + dtypeName(t);
    static const char* const kLaunchModeText[] = {"after the previous kernel's end", "early",
                                                  "early, the chunks interleaved"};
    TACO_INFO("rank %d/%d peer memory %s: %zu bytes of scratch per rank; fused phases launch %s; fused tiles %s%s",
              c0->rank, P, pms[0]->route, bytes, kLaunchModeText[peerCommLaunchMode(c0, n)],
              claimed.empty() ? "in a fixed order" : "claimed from counters", claimed.c_str());
  }
  return tacoSuccess;
}

}  // namespace taco
