// Loopback transport: N ranks in one process on the current GPU, driven from
// one thread (docs/design.md). Operations are only recorded while a group is open;
// at the outermost groupEnd the world matches every recv to the send of its
// peer (first posted, first matched), and issues each as a device copy on the
// receiver's stream, ordered by events:
//
//   sender stream   --record ready[s]-->              --wait done[r]--> (may reuse its buffer)
//   receiver stream   --wait ready[s]--> memcpy --record done[r]-->
//
// The plain collectives join every rank's stream into rank 0's stream, run one
// kernel that sees all ranks' buffers (loopback_kernels.cu) and fork back.
// Everything is enqueued by one thread in program order, so every event is
// recorded before it is waited on, and the whole exchange can be captured
// into a CUDA graph (cudaMemcpyAsync, event record and wait are capture-legal).
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "core/check.h"
#include "core/dtype.h"
#include "transport/transport.h"

namespace taco {
namespace {

enum OpKind { kSend, kRecv, kAllReduce, kReduceScatter, kAllGather, kAlltoAll };
const char* opName(int k) {
  static const char* n[] = {"send", "recv", "AllReduce", "ReduceScatter", "AllGather", "AlltoAll"};
  return n[k];
}

struct Op {
  OpKind kind;
  int rank;
  int peer;
  const void* sbuf;
  void* rbuf;
  size_t n;  // bytes (send/recv) or elements
  tacoDataType_t dtype;
  cudaStream_t stream;
};

class World {
 public:
  explicit World(int n) : n_(n), ready_(n, nullptr), done_(n, nullptr) {}
  ~World() {
    for (auto e : ready_) if (e) cudaEventDestroy(e);
    for (auto e : done_) if (e) cudaEventDestroy(e);
  }
  tacoResult_t init() {
    for (int r = 0; r < n_; ++r) {
      TACO_CUDA_CHECK(cudaEventCreateWithFlags(&ready_[r], cudaEventDisableTiming));
      TACO_CUDA_CHECK(cudaEventCreateWithFlags(&done_[r], cudaEventDisableTiming));
    }
    return tacoSuccess;
  }
  int size() const { return n_; }
  void start() { ++depth_; }
  tacoResult_t post(const Op& op) {
    if (depth_ == 0)
      return setError(tacoInternalError, "loopback: %s posted outside a transport group", opName(op.kind));
    ops_.push_back(op);
    return tacoSuccess;
  }
  tacoResult_t end() {
    if (depth_ == 0) return setError(tacoInvalidUsage, "loopback: groupEnd without groupStart");
    if (--depth_ > 0) return tacoSuccess;
    tacoResult_t r = flush();
    ops_.clear();
    return r;
  }

 private:
  tacoResult_t flush();
  tacoResult_t flushCollective();
  tacoResult_t flushP2P();

  int n_;
  int depth_ = 0;
  std::vector<Op> ops_;
  std::vector<cudaEvent_t> ready_, done_;
};

tacoResult_t World::flush() {
  if (ops_.empty()) return tacoSuccess;
  bool coll = false, p2p = false;
  for (const Op& op : ops_) (op.kind == kSend || op.kind == kRecv ? p2p : coll) = true;
  if (coll && p2p)
    return setError(tacoInvalidUsage, "loopback: a group mixes send/recv with plain collectives");
  return coll ? flushCollective() : flushP2P();
}

tacoResult_t World::flushCollective() {
  // Exactly one op per rank, all alike.
  std::vector<const Op*> byRank(n_, nullptr);
  for (const Op& op : ops_) {
    if (byRank[op.rank] != nullptr)
      return setError(tacoInvalidUsage, "loopback: rank %d issued two plain collectives in one step",
                      op.rank);
    byRank[op.rank] = &op;
  }
  for (int r = 0; r < n_; ++r) {
    if (byRank[r] == nullptr)
      return setError(tacoInvalidUsage, "loopback: %s issued by rank %d but not by rank %d",
                      opName(ops_[0].kind), ops_[0].rank, r);
    const Op& a = *byRank[0];
    const Op& b = *byRank[r];
    if (a.kind != b.kind || a.n != b.n || a.dtype != b.dtype)
      return setError(tacoInvalidArgument,
                      "loopback: ranks disagree: rank 0 calls %s(count %zu, dtype %d), rank %d calls "
                      "%s(count %zu, dtype %d)",
                      opName(a.kind), a.n, (int)a.dtype, r, opName(b.kind), b.n, (int)b.dtype);
  }
  RankPtrs p;
  p.n = n_;
  for (int r = 0; r < n_; ++r) {
    p.in[r] = byRank[r]->sbuf;
    p.out[r] = byRank[r]->rbuf;
  }
  cudaStream_t s0 = byRank[0]->stream;
  for (int r = 1; r < n_; ++r) {
    TACO_CUDA_CHECK(cudaEventRecord(ready_[r], byRank[r]->stream));
    TACO_CUDA_CHECK(cudaStreamWaitEvent(s0, ready_[r], 0));
  }
  const Op& a = *byRank[0];
  const size_t eb = dtypeBytes(a.dtype);
  switch (a.kind) {
    case kAllReduce: TACO_CUDA_CHECK(launchLoopAllReduce(p, a.n, a.dtype, s0)); break;
    case kReduceScatter: TACO_CUDA_CHECK(launchLoopReduceScatter(p, a.n, a.dtype, s0)); break;
    case kAllGather: TACO_CUDA_CHECK(launchLoopAllGather(p, a.n, eb, s0)); break;
    case kAlltoAll: TACO_CUDA_CHECK(launchLoopAlltoAll(p, a.n, eb, s0)); break;
    default: return setError(tacoInternalError, "loopback: bad collective kind %d", (int)a.kind);
  }
  TACO_CUDA_CHECK(cudaEventRecord(done_[0], s0));
  for (int r = 1; r < n_; ++r) TACO_CUDA_CHECK(cudaStreamWaitEvent(byRank[r]->stream, done_[0], 0));
  return tacoSuccess;
}

tacoResult_t World::flushP2P() {
  // One stream per rank per step.
  std::vector<cudaStream_t> stream(n_, nullptr);
  std::vector<char> active(n_, 0);
  for (const Op& op : ops_) {
    if (op.peer < 0 || op.peer >= n_)
      return setError(tacoInternalError, "loopback: rank %d names peer %d of %d", op.rank, op.peer, n_);
    if (active[op.rank] && stream[op.rank] != op.stream)
      return setError(tacoInternalError, "loopback: rank %d uses two streams in one exchange", op.rank);
    active[op.rank] = 1;
    stream[op.rank] = op.stream;
  }
  // Match recv (r <- p) with the first unmatched send (p -> r).
  std::vector<int> match(ops_.size(), -1);
  std::vector<char> used(ops_.size(), 0);
  for (size_t i = 0; i < ops_.size(); ++i) {
    const Op& rv = ops_[i];
    if (rv.kind != kRecv) continue;
    for (size_t j = 0; j < ops_.size(); ++j) {
      const Op& sd = ops_[j];
      if (sd.kind != kSend || used[j] || sd.rank != rv.peer || sd.peer != rv.rank) continue;
      if (sd.n != rv.n)
        return setError(tacoInvalidUsage,
                        "loopback: rank %d sends %zu bytes to rank %d, which expects %zu (ranks called "
                        "different collectives or counts?)",
                        sd.rank, sd.n, rv.rank, rv.n);
      used[j] = 1;
      match[i] = (int)j;
      break;
    }
    if (match[i] < 0)
      return setError(tacoInvalidUsage,
                      "loopback: rank %d waits for %zu bytes from rank %d, which sends nothing (ranks "
                      "called different collectives?)",
                      rv.rank, rv.n, rv.peer);
  }
  for (size_t j = 0; j < ops_.size(); ++j)
    if (ops_[j].kind == kSend && !used[j])
      return setError(tacoInvalidUsage, "loopback: rank %d sends %zu bytes to rank %d, which receives nothing",
                      ops_[j].rank, ops_[j].n, ops_[j].peer);

  std::vector<char> pair(n_ * n_, 0);  // pair[r*n+p]: receiver r gets data from sender p
  std::vector<char> sends(n_, 0), recvs(n_, 0);
  for (size_t i = 0; i < ops_.size(); ++i)
    if (ops_[i].kind == kRecv) {
      pair[ops_[i].rank * n_ + ops_[i].peer] = 1;
      sends[ops_[i].peer] = 1;
      recvs[ops_[i].rank] = 1;
    }
  for (int p = 0; p < n_; ++p)
    if (sends[p]) TACO_CUDA_CHECK(cudaEventRecord(ready_[p], stream[p]));
  for (int r = 0; r < n_; ++r)
    for (int p = 0; p < n_; ++p)
      if (pair[r * n_ + p] && p != r) TACO_CUDA_CHECK(cudaStreamWaitEvent(stream[r], ready_[p], 0));
  for (size_t i = 0; i < ops_.size(); ++i) {
    const Op& rv = ops_[i];
    if (rv.kind != kRecv || rv.n == 0) continue;
    const Op& sd = ops_[match[i]];
    TACO_CUDA_CHECK(cudaMemcpyAsync(rv.rbuf, sd.sbuf, rv.n, cudaMemcpyDeviceToDevice, rv.stream));
  }
  for (int r = 0; r < n_; ++r)
    if (recvs[r]) TACO_CUDA_CHECK(cudaEventRecord(done_[r], stream[r]));
  for (int r = 0; r < n_; ++r)
    for (int p = 0; p < n_; ++p)
      if (pair[r * n_ + p] && p != r) TACO_CUDA_CHECK(cudaStreamWaitEvent(stream[p], done_[r], 0));
  return tacoSuccess;
}

class LoopbackTransport : public Transport {
 public:
  LoopbackTransport(std::shared_ptr<World> w, int rank) : world_(std::move(w)), rank_(rank) {}
  const char* name() const override { return "loopback"; }
  int nranks() const override { return world_->size(); }
  int rank() const override { return rank_; }
  const World* world() const { return world_.get(); }

  tacoResult_t groupStart() override {
    world_->start();
    return tacoSuccess;
  }
  tacoResult_t groupEnd() override { return world_->end(); }
  tacoResult_t send(const void* buf, size_t bytes, int peer, cudaStream_t s) override {
    return world_->post(Op{kSend, rank_, peer, buf, nullptr, bytes, tacoFloat32, s});
  }
  tacoResult_t recv(void* buf, size_t bytes, int peer, cudaStream_t s) override {
    return world_->post(Op{kRecv, rank_, peer, nullptr, buf, bytes, tacoFloat32, s});
  }
  tacoResult_t allReduce(const void* sb, void* rb, size_t n, tacoDataType_t dt, cudaStream_t s) override {
    return coll(kAllReduce, sb, rb, n, dt, s);
  }
  tacoResult_t reduceScatter(const void* sb, void* rb, size_t n, tacoDataType_t dt, cudaStream_t s) override {
    return coll(kReduceScatter, sb, rb, n, dt, s);
  }
  tacoResult_t allGather(const void* sb, void* rb, size_t n, tacoDataType_t dt, cudaStream_t s) override {
    return coll(kAllGather, sb, rb, n, dt, s);
  }
  tacoResult_t alltoAll(const void* sb, void* rb, size_t n, tacoDataType_t dt, cudaStream_t s) override {
    return coll(kAlltoAll, sb, rb, n, dt, s);
  }
  bool alltoAllInPlace() const override { return true; }
  tacoResult_t hostAllGather(const void*, void*, size_t) override {
    // Loopback ranks are created together from one config; nothing to compare.
    return setError(tacoNotSupported, "loopback: hostAllGather is not available");
  }
  tacoResult_t finalize() override { return tacoSuccess; }
  tacoResult_t abort() override { return tacoSuccess; }

 private:
  tacoResult_t coll(OpKind k, const void* sb, void* rb, size_t n, tacoDataType_t dt, cudaStream_t s) {
    return world_->post(Op{k, rank_, rank_, sb, rb, n, dt, s});
  }
  std::shared_ptr<World> world_;
  int rank_;
};

}  // namespace

tacoResult_t loopbackCreate(int nranks, Transport** out) {
  if (nranks < 1 || nranks > kMaxLoopbackRanks)
    return setError(tacoInvalidArgument, "tacoCommInitLoopback: nranks %d is outside [1, %d]", nranks,
                    kMaxLoopbackRanks);
  auto world = std::make_shared<World>(nranks);
  TACO_CHECK(world->init());
  for (int r = 0; r < nranks; ++r) {
    out[r] = new (std::nothrow) LoopbackTransport(world, r);
    if (out[r] == nullptr) {
      for (int q = 0; q < r; ++q) delete out[q];
      return setError(tacoSystemError, "tacoCommInitLoopback: out of host memory");
    }
  }
  return tacoSuccess;
}

const void* loopbackWorldOf(const Transport* t) {
  auto* lt = dynamic_cast<const LoopbackTransport*>(t);
  return lt ? static_cast<const void*>(lt->world()) : nullptr;
}

}  // namespace taco
