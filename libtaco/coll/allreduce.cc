// AllReduce: pick the algorithm (coll/allreduce_select.cc), then build its schedule:
// plain (the transport's), staged two-shot (coll/allreduce_staged.cc) or a
// peer-memory algorithm (coll/allreduce_peer.cc). docs/collectives.md.
#include "coll/allreduce_peer.h"
#include "coll/allreduce_select.h"
#include "coll/coll.h"
#include "core/check.h"
#include "core/params.h"

namespace taco {

AlgoInputs algoInputs(const tacoComm* c, size_t count, tacoDataType_t dtype) {
  AlgoInputs in;
  in.bytes = count * dtypeBytes(dtype);
  in.nranks = c->nranks;
  in.dtype = dtype;
  in.compressed = c->compressed;
  in.peerMemory = commHasPeerMemory(c);
  in.peerCodec = peerCodecSupported(c->codec);
  in.fallbackBytes = c->config.fallbackBytes;
  return in;
}

tacoResult_t allReduceAlgo(const tacoComm* c, size_t count, tacoDataType_t dtype, int* algo) {
  const AlgoInputs in = algoInputs(c, count, dtype);
  if (c->config.algo == tacoAlgoAuto) {
    *algo = selectAllReduceAlgo(in);
    return tacoSuccess;
  }
  if (const char* why = algoUnavailable(c->config.algo, in))
    return setError(tacoInvalidUsage, "tacoAllReduce: algorithm '%s' (config algo / TACO_ALGO) cannot run: %s",
                    algoName(c->config.algo), why);
  *algo = c->config.algo;
  return tacoSuccess;
}

tacoResult_t allReduce(tacoComm* c, const CollArgs& a) {
  if (a.count == 0) return tacoSuccess;  // like NCCL: nothing to do, nothing to check
  int algo = tacoAlgoPlain;
  TACO_CHECK(allReduceAlgo(c, a.count, a.dtype, &algo));
  if (algo == tacoAlgoStaged) return allReduceStaged(c, a);
  if (algo != tacoAlgoPlain) return allReducePeer(c, a, algo);
  Schedule sched;
  sched.comm = c;
  sched.steps.push_back(stepPlain(kPlainAllReduce, a.stream, a.sendbuff, a.recvbuff, a.count, a.dtype));
  return submit(std::move(sched), "tacoAllReduce");
}

}  // namespace taco
