// AllReduce: pick the algorithm (a tuned table, coll/tune_state.h, else the model of
// coll/allreduce_select.cc), then build its schedule: plain (the transport's), staged two-shot
// (coll/allreduce_staged.cc) or a peer-memory algorithm (coll/allreduce_peer.cc).
// docs/collectives.md.
#include <atomic>
#include <cstring>

#include "coll/allreduce_peer.h"
#include "coll/allreduce_run.h"
#include "coll/coll.h"
#include "coll/tune.h"
#include "coll/tune_state.h"
#include "core/check.h"
#include "core/params.h"
#include "transport/peer_memory.h"

namespace taco {

AlgoInputs algoInputs(const tacoComm* c, size_t count, tacoDataType_t dtype) {
  AlgoInputs in;
  in.bytes = count * dtypeBytes(dtype);
  in.nranks = c->nranks;
  in.dtype = dtype;
  in.compressed = c->compressed;
  in.peerMemory = commHasPeerMemory(c);
  in.peerCodec = peerCodecSupported(c->codec);
  in.peerLaunchesApart = c->peer != nullptr && strcmp(c->peer->route, "loopback") != 0;
  in.fallbackBytes = c->config.fallbackBytes;
  return in;
}

int modelAllReduceAlgo(const tacoComm* c, size_t count, tacoDataType_t dtype) {
  return selectAllReduceAlgo(algoInputs(c, count, dtype));
}

namespace {
int tunedAutoCandidate(const TuneRow& r, const AlgoInputs& in) {
  TuneRow row = r;
  for (int k = 0; k < kNumCandidates; ++k)
    if (algoAutoExcluded(candidateAlgo(k), in) != nullptr) row[k] = kNoTime;
  return tunedCandidate(row, selectAllReduceAlgo(in));
}
}  // namespace

int tunedAutoCandidate(const tacoComm* c, const TuneRow& r, size_t count, tacoDataType_t dtype) {
  return tunedAutoCandidate(r, algoInputs(c, count, dtype));
}

tacoResult_t allReduceAlgo(const tacoComm* c, size_t count, tacoDataType_t dtype, int* algo, const char* op) {
  const AlgoInputs in = algoInputs(c, count, dtype);
  if (c->config.algo == tacoAlgoAuto) {
    *algo = selectAllReduceAlgo(in);
    // A tuned table, agreed by every rank, overrides the model where it measured something
    // faster, among the candidates the automatic choice may take now (the communicator's peer
    // memory may have been released since; an older table may hold a one-shot).
    if (const std::shared_ptr<const TuneTable> t = tuneTableOf(c, dtype)) {
      const int b = nearestBucket(*t, in.bytes);
      // Never an excluded candidate: those have no time, and the model's algorithm is never one.
      const int cand = b >= 0 ? tunedAutoCandidate(t->us[(size_t)b], in) : -1;
      if (cand >= 0) *algo = candidateAlgo(cand);
    }
    return tacoSuccess;
  }
  if (const char* why = algoUnavailable(c->config.algo, in))
    return setError(tacoInvalidUsage, "%s: algorithm '%s' (config algo / TACO_ALGO) cannot run: %s", op,
                    algoName(c->config.algo), why);
  if (const char* why = algoAutoExcluded(c->config.algo, in)) {  // runs, as asked: said once per process
    static std::atomic<bool> said{false};
    if (!said.exchange(true))
      TACO_WARN("%s: algorithm '%s' is forced (config algo / TACO_ALGO): it runs as asked, though %s", op,
                algoName(c->config.algo), why);
  }
  *algo = c->config.algo;
  return tacoSuccess;
}

tacoResult_t allReduceRun(tacoComm* c, const CollArgs& a, int algo) {
  if (algo == tacoAlgoStaged) return allReduceStaged(c, a);
  if (algo != tacoAlgoPlain) return allReducePeer(c, a, algo);
  Schedule sched;
  sched.comm = c;
  sched.steps.push_back(stepPlain(kPlainAllReduce, a.stream, a.sendbuff, a.recvbuff, a.count, a.dtype));
  return submit(std::move(sched), "tacoAllReduce");
}

tacoResult_t allReduce(tacoComm* c, const CollArgs& a) {
  if (a.count == 0) return tacoSuccess;  // like NCCL: nothing to do, nothing to check
  // TACO_TUNE=auto|force: the first eager call of a dtype measures the table (every rank makes
  // the same call, so every rank measures here).
  TACO_CHECK(tuneOnFirstUse(c, a.dtype, a.stream));
  int algo = tacoAlgoPlain;
  TACO_CHECK(allReduceAlgo(c, a.count, a.dtype, &algo, "tacoAllReduce"));
  return allReduceRun(c, a, algo);
}

}  // namespace taco
