// Runs schedules: the lockstep executor shared by both transports, and the
// thread-local group that queues schedules between tacoGroupStart/End.
#include <algorithm>
#include <map>

#include "core/check.h"
#include "coll/group.h"
#include "coll/schedule.h"
#include "transport/transport.h"

namespace taco {
namespace {

cudaStream_t streamOf(tacoComm* c, const Step& s) { return s.stream < 0 ? s.user : c->streams[s.stream]; }

// The user stream waits for every pipeline stream (a join step).
cudaError_t joinPipelines(tacoComm* c, cudaStream_t user) {
  for (int i = 0; i < c->depth; ++i) {
    cudaError_t e = cudaEventRecord(c->joinEvents[i], c->streams[i]);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(user, c->joinEvents[i], 0);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

tacoResult_t runLocal(tacoComm* c, const Step& s) {
  const cudaStream_t st = streamOf(c, s);
  switch (s.kind) {
    case kStepFork:
      TACO_CUDA_CHECK(cudaEventRecord(c->forkEvent, s.user));
      for (int i = 0; i < c->depth; ++i) TACO_CUDA_CHECK(cudaStreamWaitEvent(c->streams[i], c->forkEvent, 0));
      return tacoSuccess;
    case kStepJoin:
      TACO_CUDA_CHECK(joinPipelines(c, s.user));
      return tacoSuccess;
    case kStepCompress:
      TACO_CUDA_CHECK(launchCompress(c->codec, s.in, s.count, s.dtype, s.out, st));
      return tacoSuccess;
    case kStepDecompress:
      TACO_CUDA_CHECK(launchDecompress(c->codec, s.in, s.y, s.count, s.dtype, st));
      return tacoSuccess;
    case kStepDecompressAccumulate:
      TACO_CUDA_CHECK(launchDecompressAccumulate(c->codec, s.inputs, s.exact, s.y, s.count, s.dtype, st));
      return tacoSuccess;
    case kStepDecompressReduceCompress:
      TACO_CUDA_CHECK(
          launchDecompressReduceCompress(c->codec, s.inputs, s.exact, s.out, s.y, s.count, s.dtype, st));
      return tacoSuccess;
    default:
      return setError(tacoInternalError, "executor: step kind %d is not local", (int)s.kind);
  }
}

tacoResult_t postSync(tacoComm* c, const Step& s) {
  Transport* t = c->transport;
  const cudaStream_t st = streamOf(c, s);
  if (s.kind == kStepExchange) {
    for (const Xfer& x : s.xfers) {
      if (x.send) TACO_CHECK(t->send(x.buf, x.bytes, x.peer, st));
      else TACO_CHECK(t->recv(x.buf, x.bytes, x.peer, st));
    }
    return tacoSuccess;
  }
  switch (s.plain) {
    case kPlainAllReduce: return t->allReduce(s.in, s.y, s.count, s.dtype, st);
    case kPlainReduceScatter: return t->reduceScatter(s.in, s.y, s.count, s.dtype, st);
    case kPlainAllGather: return t->allGather(s.in, s.y, s.count, s.dtype, st);
    case kPlainAlltoAll: return t->alltoAll(s.in, s.y, s.count, s.dtype, st);
  }
  return setError(tacoInternalError, "executor: bad plain collective %d", (int)s.plain);
}

// After a failed step: the user stream of every program whose fork ran and whose join did not
// waits for the pipeline streams anyway, so that work already enqueued (a call launched in
// part) is ordered before whatever the user enqueues next, and before buffers are freed. Best
// effort, and silent: the failure's own error stays the one reported.
void joinAfterFailure(const std::vector<Schedule*>& progs, const std::vector<size_t>& next) {
  for (size_t i = 0; i < progs.size(); ++i) {
    const Schedule& p = *progs[i];
    bool open = false;
    for (size_t k = 0; k < next[i] && k < p.steps.size(); ++k)
      if (p.steps[k].kind == kStepFork) open = true;
      else if (p.steps[k].kind == kStepJoin) open = false;
    if (!open) continue;
    for (size_t k = next[i]; k < p.steps.size(); ++k) {
      if (p.steps[k].kind != kStepJoin) continue;
      (void)joinPipelines(p.comm, p.steps[k].user);
      break;
    }
  }
  (void)cudaGetLastError();
}

tacoResult_t runSteps(std::vector<Schedule*>& progs, std::vector<size_t>& next) {
  const size_t n = progs.size();
  for (;;) {
    size_t atEnd = 0;
    for (size_t i = 0; i < n; ++i) {
      Schedule& p = *progs[i];
      while (next[i] < p.steps.size() && !isSyncStep(p.steps[next[i]])) TACO_CHECK(runLocal(p.comm, p.steps[next[i]++]));
      if (next[i] == p.steps.size()) ++atEnd;
    }
    if (atEnd == n) return tacoSuccess;
    if (atEnd != 0) {
      size_t done = 0, waiting = 0;
      for (size_t i = 0; i < n; ++i) (next[i] == progs[i]->steps.size() ? done : waiting) = i;
      return setError(tacoInvalidUsage,
                      "ranks issued different collectives in one group: rank %d has finished while rank %d "
                      "still waits to communicate",
                      progs[done]->comm->rank, progs[waiting]->comm->rank);
    }
    const StepKind kind = progs[0]->steps[next[0]].kind;
    for (size_t i = 1; i < n; ++i)
      if (progs[i]->steps[next[i]].kind != kind)
        return setError(tacoInvalidUsage,
                        "ranks issued different collectives in one group (rank %d exchanges while rank %d "
                        "runs a plain collective)",
                        progs[0]->comm->rank, progs[i]->comm->rank);
    if (kind == kStepLaunch) {  // one launch for every local rank: no transport group
      std::vector<tacoComm*> comms(n);
      std::vector<const Step*> steps(n);
      for (size_t i = 0; i < n; ++i) comms[i] = progs[i]->comm, steps[i] = &progs[i]->steps[next[i]];
      for (size_t i = 1; i < n; ++i)
        if (steps[i]->launch != steps[0]->launch)
          return setError(tacoInvalidUsage, "ranks issued different collectives in one group (ranks %d and %d)",
                          progs[0]->comm->rank, progs[i]->comm->rank);
      TACO_CHECK(steps[0]->launch(comms, steps));
      for (size_t i = 0; i < n; ++i) ++next[i];
      continue;
    }
    // One transport group around every rank's part of this step; always balanced.
    tacoResult_t res = tacoSuccess;
    size_t started = 0;
    for (; started < n && res == tacoSuccess; ++started) res = progs[started]->comm->transport->groupStart();
    if (res != tacoSuccess) --started;
    for (size_t i = 0; i < n && res == tacoSuccess; ++i) res = postSync(progs[i]->comm, progs[i]->steps[next[i]]);
    for (size_t i = 0; i < started; ++i) {
      tacoResult_t e = progs[i]->comm->transport->groupEnd();
      if (res == tacoSuccess) res = e;
    }
    TACO_CHECK(res);
    for (size_t i = 0; i < n; ++i) ++next[i];
  }
}

}  // namespace

tacoResult_t runLockstep(std::vector<Schedule*>& progs) {
  std::vector<size_t> next(progs.size(), 0);  // next[i]: index of program i's next step
  const tacoResult_t r = runSteps(progs, next);
  if (r != tacoSuccess) joinAfterFailure(progs, next);
  return r;
}

// ---------------------------------------------------------------- groups
namespace {
thread_local int tGroupDepth = 0;
thread_local std::vector<Schedule> tPending;
thread_local int tSuspensions = 0;  // GroupSuspensions alive on this thread
}  // namespace

tacoResult_t groupStart() {
  ++tGroupDepth;
  return tacoSuccess;
}

int groupDepth() { return tGroupDepth; }

GroupSuspension::GroupSuspension() : depth_(tGroupDepth) {
  pending_.swap(tPending);
  tGroupDepth = 0;
  ++tSuspensions;
}

GroupSuspension::~GroupSuspension() {
  --tSuspensions;
  // Whatever the suspended code left open or queued is dropped: it ran its own groups to the end.
  for (Schedule& s : tPending) s.comm->pendingOps = 0;
  tPending.swap(pending_);
  tGroupDepth = depth_;
  for (Schedule& s : tPending) s.comm->pendingOps = 0;
  for (Schedule& s : tPending) ++s.comm->pendingOps;
}

void groupForget(tacoComm* comm) {
  for (size_t i = 0; i < tPending.size();) {
    if (tPending[i].comm == comm) tPending.erase(tPending.begin() + i);
    else ++i;
  }
  comm->pendingOps = 0;
}

tacoResult_t submit(Schedule&& s, const char* opName) {
  tacoComm* c = s.comm;
  if (tGroupDepth > 0) {
    tPending.push_back(std::move(s));
    ++c->pendingOps;
    return tacoSuccess;
  }
  if (loopbackWorldOf(c->transport) != nullptr && c->nranks > 1)
    return setError(tacoInvalidUsage,
                    "%s: a loopback communicator of %d ranks must be driven inside "
                    "tacoGroupStart()/tacoGroupEnd(), one call per rank",
                    opName, c->nranks);
  std::vector<Schedule*> one{&s};
  return runLockstep(one);
}

tacoResult_t groupEnd() {
  if (tGroupDepth == 0) return setError(tacoInvalidUsage, "tacoGroupEnd: no group is open (unbalanced tacoGroupEnd)");
  if (--tGroupDepth > 0) return tacoSuccess;
  std::vector<Schedule> pending;
  pending.swap(tPending);
  for (Schedule& s : pending) s.comm->pendingOps = 0;

  // Buckets: one per loopback world; every NCCL communicator in one bucket.
  // Within a bucket, one merged program per communicator, in issue order.
  std::map<const void*, std::vector<Schedule>> buckets;
  std::vector<const void*> order;
  for (Schedule& s : pending) {
    const void* key = loopbackWorldOf(s.comm->transport);
    auto& progs = buckets[key];
    if (progs.empty()) order.push_back(key);
    auto it = std::find_if(progs.begin(), progs.end(), [&](const Schedule& p) { return p.comm == s.comm; });
    if (it == progs.end()) {
      progs.push_back(std::move(s));
    } else {
      for (Step& st : s.steps) it->steps.push_back(std::move(st));
    }
  }
  tacoResult_t first = tacoSuccess;
  for (const void* key : order) {
    auto& progs = buckets[key];
    std::sort(progs.begin(), progs.end(), [](const Schedule& a, const Schedule& b) { return a.comm->rank < b.comm->rank; });
    tacoResult_t res = tacoSuccess;
    if (key != nullptr && (int)progs.size() != progs[0].comm->nranks) {
      int missing = 0;
      for (const Schedule& p : progs) if (p.comm->rank == missing) ++missing;
      res = setError(tacoInvalidUsage,
                     "tacoGroupEnd: loopback rank %d of %d issued no collective in this group (every rank of a "
                     "loopback world must make the same calls)",
                     missing, progs[0].comm->nranks);
    } else {
      std::vector<Schedule*> ptrs;
      for (Schedule& p : progs) ptrs.push_back(&p);
      res = runLockstep(ptrs);
    }
    if (res != tacoSuccess) {
      for (Schedule& p : progs) commRecordError(p.comm);
      if (first == tacoSuccess) first = res;
    }
    // Taken when its first collective was queued. A group the library runs while the caller's is
    // suspended (the tuner's) took no hold, and must not give back one the caller's group keeps.
    if (tSuspensions == 0)
      for (Schedule& p : progs) commReleaseAfterGroup(p.comm);
  }
  return first;
}

}  // namespace taco
