// ipc_world: the peer-memory AllReduce (fused two-shot, one-shot, raw one-shot) across
// processes through the cuda-ipc route (transport/peer_memory.cc), every process on the one
// GPU. What a loopback world (one process) cannot show: IPC handles exported, opened and
// verified in other processes, and the kernels' flags and fences (st.release.sys /
// ld.acquire.sys, coll/device/peer_sync.cuh) working between CUDA contexts.
//
//   ipc_world P [--round-timeout SECONDS]       P in 2..16 (tests/gpu/test_ipc_world.py: 2, 3, 4, 8)
//
// The parent forks three worlds of P children before any CUDA call (a CUDA context does not
// survive fork), each child on a socketpair; the parent is the hub of their host all-gather
// and the judge of their results:
//   main     every algorithm x codec x dtype x count, in and out of place, then one call
//            captured in a CUDA graph and replayed 50 times on changing inputs, then bursts:
//            60 calls back to back on one stream (fused, one-shot, raw one-shot), no
//            synchronisation between them, each on its own input and output, a call of one
//            chunk and one of three in turn (a rank that runs ahead starts its next call while
//            a slower one still reads this one's scratch: what the double buffering by epoch
//            must make safe, docs/design.md §5);
//   timeout  rank P-1 skips its calls (TACO_FAULT_SKIP_RANK), TACO_WAIT_TIMEOUT_S=3: the other
//            ranks' kernels give up, the error surfaces, the communicator is destroyed, new
//            communicators work;
//   abort    the same, ended by tacoCommAbort from another thread while the kernel waits;
//   tune     peer memory as it comes by default (TACO_PEER_MEMORY unset: it must be cuda-ipc), the
//            AllReduce tuner (tacoCommTune) with one algorithm made wrong on rank 0 only
//            (TACO_TUNE_FAULT=fused): every rank must demote it and hold the same table (hash and
//            choices), the cache must not hold it (an injected fault may not recur), the table must leave the one-shots out
//            (the ranks' peer kernels are separate launches: algoAutoExcluded), and the AllReduce
//            that follows, by the table's choice, must give every rank the same bits.
// A child builds a real communicator with commCreate (coll/comm_init.cc, the path of the NCCL
// init) on HubTransport: a test transport whose hostAllGather goes through the parent and
// which moves no other bytes but the plain AllReduce's, staged through the parent (the tuner
// times it and combines the ranks' timings through it). TACO_PEER_MEMORY=1 opens the cuda-ipc route, tacoConfig_t.algo
// forces the algorithm, and the public tacoAllReduce runs the whole stack. The parent computes
// every expected output on a loopback world with the same configuration (the loopback peer
// kernels are checked bit for bit against the numpy model by tests/gpu/test_peer_allreduce.py)
// and checks that every rank returned exactly those bits. Every wait of the parent is bounded:
// a child that hangs or dies fails the run, and the children die with the parent.
//
// Several processes on one GPU time-slice (or share the SMs under MPS): slow, and not a
// performance configuration (docs/collectives.md); this program checks correctness only.
//
// It links the library's objects (CMake target taco_objects), not libtaco.so, whose internal
// symbols are hidden.
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "coll/coll.h"
#include "coll/peer_plan.h"
#include "core/dtype_convert.cuh"
#include "core/check.h"
#include "core/comm.h"
#include "core/params.h"
#include "taco.h"
#include "transport/peer_memory.h"
#include "transport/transport.h"

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string vformat(const char* fmt, va_list ap) {
  char buf[4096];
  vsnprintf(buf, sizeof(buf), fmt, ap);
  return buf;
}

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string s = vformat(fmt, ap);
  va_end(ap);
  return s;
}

// ------------------------------------------------------------------------------ the cases

enum World { kWorldMain, kWorldTimeout, kWorldAbort, kWorldTune, kNumWorlds };
const char* const kWorldNames[kNumWorlds] = {"main", "timeout", "abort", "tune"};

enum CaseKind { kCall, kGraph, kBurst, kTimeout, kAbort, kTune };

struct Case {
  CaseKind kind;
  World world;
  int algo;  // tacoAlgo_t, forced through tacoConfig_t.algo
  const char* codec;
  size_t chunkBytes;
  tacoDataType_t dtype;
  size_t count;
  bool inplace;
  uint32_t variant;  // which input (kCall)
  size_t count2 = 0;  // kBurst: the calls alternate count and count2 elements
};

constexpr size_t kChunkBytes = 16 << 20;      // the large count takes several launches (epochs) per call
constexpr size_t kSmallChunkBytes = 1 << 20;  // graph and fault cases: many launches per call
constexpr size_t kLargeCount = (size_t(1) << 24) + 5;
constexpr int kGraphVariants = 3;  // the graph replays inputs 1..3 in turn
constexpr int kGraphReplays = 50;
constexpr int kBurstCalls = 60;  // a burst's call i runs input 1 + i % 3, of count (i even) or count2 (odd)
constexpr size_t kFullBytes = 1 << 20;  // outputs up to this size travel whole (element-exact reports)
constexpr size_t kDigestBlock = 64 << 10;

size_t dtypeSize(tacoDataType_t t) { return t == tacoFloat32 ? 4 : 2; }

const char* dtypeName(tacoDataType_t t) {
  return t == tacoFloat32 ? "fp32" : t == tacoFloat16 ? "fp16" : t == tacoBfloat16 ? "bf16" : "?";
}

std::string describe(const Case& k, int P) {
  const char* algo = taco::algoName(k.algo);
  const std::string codec = k.algo == tacoAlgoOneShotRaw ? "" : std::string(" ") + k.codec;
  const std::string what = format("P=%d %s%s %s count=%zu", P, algo, codec.c_str(), dtypeName(k.dtype), k.count);
  switch (k.kind) {
    case kCall:
      return what + (k.inplace ? " in-place" : " out-of-place") +
             (k.variant != 0 ? format(" input %u", k.variant) : std::string()) +
             (k.world != kWorldMain ? format(" (new communicator, %s world)", kWorldNames[k.world]) : std::string());
    case kGraph: return format("P=%d graph of %s, %d replays", P, what.c_str() + what.find(' ') + 1, kGraphReplays);
    case kBurst:
      return format("P=%d burst of %d calls back to back, %s and count=%zu in turn", P, kBurstCalls,
                    what.c_str() + what.find(' ') + 1, k.count2);
    case kTimeout: return format("P=%d timeout: rank %d skips, %s", P, P - 1, what.c_str() + what.find(' ') + 1);
    case kAbort: return format("P=%d abort: rank %d skips, %s", P, P - 1, what.c_str() + what.find(' ') + 1);
    case kTune:
      return format("P=%d tune with the default peer memory, %s then an AllReduce of %zu elements by the table",
                    P, k.codec, k.count);
  }
  return what;
}

// A count of `dtype` whose plan takes `nChunks` launches on P ranks with k's algorithm, codec and
// chunk size (peerPlan, as the library cuts the call), the smallest in steps of P blocks.
size_t countOfChunks(const Case& k, int P, size_t nChunks) {
  tacoCodec_t codec{};
  if (tacoCodecFind(k.codec, &codec) != tacoSuccess) {
    fprintf(stderr, "ipc_world: unknown codec %s\n", k.codec);
    exit(2);
  }
  const size_t scratch = taco::peerScratchBytes(k.chunkBytes, P, codec);
  const size_t step = (size_t)P * 256;
  size_t n = step;
  while (taco::peerPlan(k.algo, codec, n, k.dtype, P, scratch).nChunks < nChunks) n *= 2;
  size_t lo = n / 2, hi = n;  // the smallest multiple of `step` in (lo, hi] with nChunks
  while (hi - lo > step) {
    const size_t mid = (lo + hi) / 2 / step * step;
    if (taco::peerPlan(k.algo, codec, mid, k.dtype, P, scratch).nChunks >= nChunks) hi = mid;
    else lo = mid;
  }
  const size_t count = hi + 5;  // not a whole number of blocks
  if (taco::peerPlan(k.algo, codec, count, k.dtype, P, scratch).nChunks != nChunks) {
    fprintf(stderr, "ipc_world: no count of %zu chunks for %s\n", nChunks, taco::algoName(k.algo));
    exit(2);
  }
  return count;
}

// The algorithms run in bursts between processes.
constexpr int kBurstAlgos[] = {tacoAlgoFused, tacoAlgoOneShot, tacoAlgoOneShotRaw};

std::vector<Case> buildCases(int P) {
  std::vector<Case> cs;
  auto counts = [&](tacoDataType_t dt) {
    return std::vector<size_t>{1, (size_t)P * 256 - 1, (size_t(3) << 20) / dtypeSize(dt) + 33, kLargeCount};
  };
  const char* const codecs[] = {"fp8-block", "taco", "int8-hadamard", "int6-hadamard"};
  for (int algo : {tacoAlgoFused, tacoAlgoOneShot})
    for (const char* codec : codecs) {
      std::vector<tacoDataType_t> dts{tacoBfloat16, tacoFloat32};
      if (strcmp(codec, "taco") == 0) dts.push_back(tacoFloat16);
      for (tacoDataType_t dt : dts)
        for (size_t n : counts(dt))
          for (bool inplace : {false, true})
            cs.push_back({kCall, kWorldMain, algo, codec, kChunkBytes, dt, n, inplace, 0});
    }
  for (tacoDataType_t dt : {tacoBfloat16, tacoFloat32, tacoFloat16})  // raw one-shot takes no codec
    for (size_t n : counts(dt))
      for (bool inplace : {false, true})
        cs.push_back({kCall, kWorldMain, tacoAlgoOneShotRaw, "fp8-block", kChunkBytes, dt, n, inplace, 0});
  // CUDA graph: eager calls on inputs 1..3 (their outputs are the replays' reference), then the
  // graph; about three launches (epochs) per call.
  const size_t graphCount = (size_t(1) << 20) + 17;
  for (uint32_t v = 1; v <= kGraphVariants; ++v)
    cs.push_back({kCall, kWorldMain, tacoAlgoFused, "taco", kSmallChunkBytes, tacoBfloat16, graphCount, false, v});
  cs.push_back({kGraph, kWorldMain, tacoAlgoFused, "taco", kSmallChunkBytes, tacoBfloat16, graphCount, false, 0});
  // Bursts: eager calls on inputs 1..3 of both counts (the references), then the burst.
  for (int algo : kBurstAlgos) {
    Case b{kBurst, kWorldMain, algo, "fp8-block", kSmallChunkBytes, tacoBfloat16, 0, false, 0};
    b.count = countOfChunks(b, P, 1);
    b.count2 = countOfChunks(b, P, 3);
    for (size_t n : {b.count, b.count2})
      for (uint32_t v = 1; v <= kGraphVariants; ++v)
        cs.push_back({kCall, kWorldMain, algo, b.codec, b.chunkBytes, b.dtype, n, false, v});
    cs.push_back(b);
  }
  // A rank that never arrives; then new communicators of the same processes work.
  for (World w : {kWorldTimeout, kWorldAbort}) {
    cs.push_back({w == kWorldTimeout ? kTimeout : kAbort, w, tacoAlgoFused, "taco", kSmallChunkBytes, tacoBfloat16,
                  size_t(1) << 20, false, 0});
    cs.push_back({kCall, w, tacoAlgoFused, "taco", kSmallChunkBytes, tacoBfloat16, (size_t)P * 256 - 1, false, 4});
    cs.push_back({kCall, w, tacoAlgoOneShot, "int8-hadamard", kChunkBytes, tacoFloat32,
                  (size_t(3) << 20) / 4 + 33, true, 5});
  }
  // The tuner between processes: default peer memory, one algorithm wrong on rank 0 only.
  cs.push_back({kTune, kWorldTune, tacoAlgoAuto, "fp8-block", kChunkBytes, tacoBfloat16, (size_t)P * 256 * 9 + 5,
                false, 6});
  return cs;
}

tacoConfig_t configOf(const Case& k) {
  tacoConfig_t cfg = TACO_CONFIG_INITIALIZER;
  cfg.codec = k.codec;
  cfg.chunkBytes = k.chunkBytes;
  cfg.fallbackBytes = 0;
  cfg.pipelineDepth = 2;
  cfg.checkConsistency = 1;
  cfg.algo = k.algo;
  return cfg;
}

using ConfigKey = std::tuple<int, std::string, size_t>;
ConfigKey configKey(const Case& k) { return ConfigKey{k.algo, k.codec, k.chunkBytes}; }

// ------------------------------------------------------------------ inputs and digests

uint64_t mix64(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Rank `rank`'s input `variant`: every value built from its bits (no rounding anywhere, so the
// parent and the children agree exactly). Per 256-element block: a magnitude around 2^-6..2^6, or
// all zeros, or tiny values, or one outlier 2^8 (fp16: 2^4) above the rest, so that the codecs'
// per-block scales see a wide range; scattered zeros. fp16 stays small enough that P <= 16
// summed values cannot overflow.
std::vector<uint8_t> makeInput(tacoDataType_t dt, size_t count, int rank, uint32_t variant) {
  std::vector<uint8_t> out(count * dtypeSize(dt));
  const uint64_t key = mix64(((uint64_t)variant << 40) ^ ((uint64_t)rank << 20) ^ (uint64_t)dt);
  const bool half = dt == tacoFloat16;
  for (size_t b0 = 0; b0 < count; b0 += 256) {
    const uint64_t bh = mix64(key ^ ((b0 / 256) * 0x632be59bd9b4e019ull));
    const int kind = (int)(bh & 15);  // 0: zeros, 1: tiny, 2: an outlier, else ordinary
    int center = half ? (int)((bh >> 8) % 11) - 6 : (int)((bh >> 8) % 13) - 6;
    if (kind == 1) center = half ? -12 : -24;
    const size_t outlier = (bh >> 20) & 255;
    const size_t end = std::min(count, b0 + 256);
    for (size_t i = b0; i < end; ++i) {
      const uint64_t h = mix64(key + i);
      int e = center + (int)((h >> 1) % 5) - 2;
      if (kind == 2 && i - b0 == outlier) e = center + (half ? 4 : 8);
      const bool zero = kind == 0 || ((h >> 40) & 63) == 0;
      const uint32_t sign = (uint32_t)(h & 1);
      if (dt == tacoFloat32) {
        const uint32_t bits =
            zero ? 0u : (sign << 31) | ((uint32_t)(e + 127) << 23) | ((uint32_t)(h >> 16) & 0x7fffffu);
        memcpy(&out[i * 4], &bits, 4);
      } else {
        uint16_t bits = 0;
        if (!zero && dt == tacoBfloat16)
          bits = (uint16_t)((sign << 15) | ((uint32_t)(e + 127) << 7) | ((uint32_t)(h >> 16) & 0x7fu));
        if (!zero && half)
          bits = (uint16_t)((sign << 15) | ((uint32_t)(std::max(e, -14) + 15) << 10) | ((uint32_t)(h >> 16) & 0x3ffu));
        memcpy(&out[i * 2], &bits, 2);
      }
    }
  }
  return out;
}

uint64_t digest(const uint8_t* p, size_t n) {
  uint64_t h = mix64(n);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    h = mix64(h ^ w);
  }
  uint64_t tail = 0;
  memcpy(&tail, p + i, n - i);
  return mix64(h ^ tail ^ 0xa5a5a5a5a5a5a5a5ull);
}

std::vector<uint64_t> blockDigests(const uint8_t* p, size_t n) {
  std::vector<uint64_t> d;
  for (size_t off = 0; off < n; off += kDigestBlock) d.push_back(digest(p + off, std::min(kDigestBlock, n - off)));
  return d;
}

float bitsToFloat(const uint8_t* p, tacoDataType_t dt) {
  uint32_t u = 0;
  float f;
  if (dt == tacoFloat32) {
    memcpy(&u, p, 4);
  } else {
    uint16_t h;
    memcpy(&h, p, 2);
    if (dt == tacoBfloat16) {
      u = (uint32_t)h << 16;
    } else {  // fp16
      const uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 0x3ff;
      if (e == 0) {
        f = std::ldexp((float)m, -24);
        return s ? -f : f;
      }
      u = s | (e == 31 ? 0xffu << 23 : (e + 112) << 23) | m << 13;
    }
  }
  memcpy(&f, &u, 4);
  return f;
}

std::string elementText(const uint8_t* p, tacoDataType_t dt) {
  uint32_t u = 0;
  memcpy(&u, p, dtypeSize(dt));
  return format(dt == tacoFloat32 ? "%08x (%g)" : "%04x (%g)", u, (double)bitsToFloat(p, dt));
}

// ------------------------------------------------------------------ the wire to the parent

enum MsgKind : uint32_t { kMsgGather = 1, kMsgResult = 2, kMsgFail = 3, kMsgDone = 4 };
struct MsgHead {
  uint32_t magic;
  uint32_t kind;
  uint64_t bytes;
};
constexpr uint32_t kMsgMagic = 0x1bc0a11du;
constexpr uint64_t kMaxMsgBytes = uint64_t(1) << 30;

// A result: this head, nDigests digests, the output (hasFull), then a note.
struct ResultHead {
  uint32_t caseIndex;
  uint32_t nDigests;
  uint64_t bytes;
  uint64_t overall;  // digest of the whole output
  uint32_t hasFull;
  uint32_t noteBytes;
};

bool writeAll(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= (size_t)w;
  }
  return true;
}

bool readAll(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t r = read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= (size_t)r;
  }
  return true;
}

// =========================================================================== the children

struct ChildState {
  int fd = -1;
  int rank = 0;
  int P = 0;
  World world = kWorldMain;
  cudaStream_t stream = nullptr;
  void* dA = nullptr;  // sendbuff (and recvbuff in place)
  void* dB = nullptr;  // recvbuff out of place
  std::map<ConfigKey, tacoComm*> comms;
  std::map<std::tuple<int, size_t, uint32_t>, std::vector<uint8_t>> inputs;
  std::map<std::string, std::vector<uint8_t>> eager;  // outputs of the calls on inputs >= 1 (eagerKey)
};
ChildState g;

[[noreturn]] void childFail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
[[noreturn]] void childFail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const std::string msg = format("rank %d (pid %d): ", g.rank, (int)getpid()) + vformat(fmt, ap);
  va_end(ap);
  const MsgHead h{kMsgMagic, kMsgFail, msg.size()};
  if (!writeAll(g.fd, &h, sizeof(h)) || !writeAll(g.fd, msg.data(), msg.size()))
    fprintf(stderr, "ipc_world %s\n", msg.c_str());
  _exit(1);
}

#define CUDA_OR_FAIL(call)                                                                           \
  do {                                                                                               \
    const cudaError_t e_ = (call);                                                                   \
    if (e_ != cudaSuccess) childFail("%s:%d %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
  } while (0)

void hubSend(MsgKind kind, const void* payload, size_t bytes) {
  const MsgHead h{kMsgMagic, kind, bytes};
  if (!writeAll(g.fd, &h, sizeof(h)) || !writeAll(g.fd, payload, bytes)) _exit(1);  // the parent is gone
}

bool hubAllGather(const void* mine, void* all, size_t bytes) {
  const MsgHead h{kMsgMagic, kMsgGather, bytes};
  return writeAll(g.fd, &h, sizeof(h)) && writeAll(g.fd, mine, bytes) && readAll(g.fd, all, bytes * (size_t)g.P);
}

// Every rank reaches this point before any goes on. False when the parent is gone.
bool hubBarrier() {
  char mine = 1;
  std::vector<char> all((size_t)g.P);
  return hubAllGather(&mine, all.data(), 1);
}

void barrier() {
  if (!hubBarrier()) _exit(1);
}

// A test transport: its host all-gather goes through the parent, and so, synchronously and
// staged through host memory, do the plain AllReduce and grouped send/recv (what the tuner of the
// tune world times and combines through); the other plain collectives are errors. Slow, and
// never captured in a graph: a correctness vehicle only.
class HubTransport final : public taco::Transport {
 public:
  HubTransport(int rank, int nranks) : rank_(rank), nranks_(nranks) {}
  const char* name() const override { return "ipc_world hub"; }
  int nranks() const override { return nranks_; }
  int rank() const override { return rank_; }
  tacoResult_t groupStart() override {
    ++depth_;
    return tacoSuccess;
  }
  tacoResult_t groupEnd() override {
    if (depth_ == 0 || --depth_ > 0) return tacoSuccess;
    return exchange();
  }
  tacoResult_t send(const void* buf, size_t bytes, int peer, cudaStream_t st) override {
    sends_.push_back(Xfer{const_cast<void*>(buf), bytes, peer, st});
    return depth_ > 0 ? tacoSuccess : exchange();
  }
  tacoResult_t recv(void* buf, size_t bytes, int peer, cudaStream_t st) override {
    recvs_.push_back(Xfer{buf, bytes, peer, st});
    return depth_ > 0 ? tacoSuccess : exchange();
  }
  // Staged through the parent, synchronously: every rank's buffer, summed in fp32 in rank order and
  // rounded once (the loopback plain kernel's order). Not capturable; the tune world needs it.
  tacoResult_t allReduce(const void* sb, void* rb, size_t n, tacoDataType_t dt, cudaStream_t st) override {
    const size_t eb = dtypeSize(dt), bytes = n * eb;
    std::vector<uint8_t> mine(bytes), all(bytes * (size_t)nranks_), out(bytes);
    if (cudaMemcpyAsync(mine.data(), sb, bytes, cudaMemcpyDeviceToHost, st) != cudaSuccess ||
        cudaStreamSynchronize(st) != cudaSuccess)
      return taco::setError(tacoUnhandledCudaError, "ipc_world hub: allReduce: reading the send buffer failed");
    if (!hubAllGather(mine.data(), all.data(), bytes))
      return taco::setError(tacoSystemError, "ipc_world hub: the parent closed the connection");
    for (size_t i = 0; i < n; ++i) {
      float s = 0;
      for (int q = 0; q < nranks_; ++q) {
        const uint8_t* v = &all[(size_t)q * bytes + i * eb];
        const float x = dt == tacoFloat32 ? *reinterpret_cast<const float*>(v)
                        : dt == tacoBfloat16 ? taco::toFloat(*reinterpret_cast<const __nv_bfloat16*>(v))
                                             : taco::toFloat(*reinterpret_cast<const __half*>(v));
        s = q == 0 ? x : s + x;
      }
      if (dt == tacoFloat32) memcpy(&out[i * eb], &s, 4);
      else if (dt == tacoBfloat16) *reinterpret_cast<__nv_bfloat16*>(&out[i * eb]) = taco::fromFloat<__nv_bfloat16>(s);
      else *reinterpret_cast<__half*>(&out[i * eb]) = taco::fromFloat<__half>(s);
    }
    if (cudaMemcpyAsync(rb, out.data(), bytes, cudaMemcpyHostToDevice, st) != cudaSuccess ||
        cudaStreamSynchronize(st) != cudaSuccess)
      return taco::setError(tacoUnhandledCudaError, "ipc_world hub: allReduce: writing the result failed");
    return tacoSuccess;
  }
  tacoResult_t reduceScatter(const void*, void*, size_t, tacoDataType_t, cudaStream_t) override {
    return movesNoBytes("reduceScatter");
  }
  tacoResult_t allGather(const void*, void*, size_t, tacoDataType_t, cudaStream_t) override {
    return movesNoBytes("allGather");
  }
  tacoResult_t alltoAll(const void*, void*, size_t, tacoDataType_t, cudaStream_t) override {
    return movesNoBytes("alltoAll");
  }
  bool alltoAllInPlace() const override { return false; }
  tacoResult_t hostAllGather(const void* mine, void* all, size_t bytes) override {
    if (!hubAllGather(mine, all, bytes))
      return taco::setError(tacoSystemError, "ipc_world hub: the parent closed the connection");
    return tacoSuccess;
  }
  tacoResult_t finalize() override { return tacoSuccess; }
  tacoResult_t abort() override { return tacoSuccess; }

 private:
  struct Xfer {
    void* buf;
    size_t bytes;
    int peer;
    cudaStream_t stream;
  };

  // The group's sends and receives: every rank learns how many bytes each rank sends each peer,
  // then every rank's sends, packed per peer in posting order and padded to the largest, cross
  // in one all-gather; each receive takes the next bytes from its peer's stream (NCCL's order).
  tacoResult_t exchange() {
    const size_t P = (size_t)nranks_;
    std::vector<uint64_t> mine(P, 0), matrix(P * P);
    for (const Xfer& x : sends_) mine[(size_t)x.peer] += x.bytes;
    if (!hubAllGather(mine.data(), matrix.data(), P * sizeof(uint64_t)))
      return taco::setError(tacoSystemError, "ipc_world hub: the parent closed the connection");
    uint64_t slot = 0;
    for (uint64_t b : matrix) slot = std::max(slot, b);
    std::vector<uint8_t> out(P * slot), in(P * P * slot);
    std::vector<size_t> fill(P, 0);
    for (const Xfer& x : sends_) {
      if (cudaStreamSynchronize(x.stream) != cudaSuccess ||
          cudaMemcpy(&out[(size_t)x.peer * slot + fill[(size_t)x.peer]], x.buf, x.bytes, cudaMemcpyDeviceToHost) !=
              cudaSuccess)
        return taco::setError(tacoUnhandledCudaError, "ipc_world hub: send: reading the buffer failed");
      fill[(size_t)x.peer] += x.bytes;
    }
    if (slot > 0 && !hubAllGather(out.data(), in.data(), P * slot))
      return taco::setError(tacoSystemError, "ipc_world hub: the parent closed the connection");
    std::vector<size_t> taken(P, 0);
    for (const Xfer& x : recvs_) {
      const size_t from = (size_t)x.peer;
      if (taken[from] + x.bytes > matrix[from * P + (size_t)rank_])
        return taco::setError(tacoInternalError, "ipc_world hub: rank %d receives more from rank %d than it sent",
                              rank_, x.peer);
      if (cudaStreamSynchronize(x.stream) != cudaSuccess ||
          cudaMemcpy(x.buf, &in[(from * P + (size_t)rank_) * slot + taken[from]], x.bytes, cudaMemcpyHostToDevice) !=
              cudaSuccess)
        return taco::setError(tacoUnhandledCudaError, "ipc_world hub: recv: writing the buffer failed");
      taken[from] += x.bytes;
    }
    sends_.clear();
    recvs_.clear();
    return tacoSuccess;
  }

  int depth_ = 0;
  std::vector<Xfer> sends_, recvs_;
  static tacoResult_t movesNoBytes(const char* op) {
    return taco::setError(tacoNotSupported,
                          "ipc_world's test transport moves no bytes (%s called): only the peer-memory "
                          "AllReduce can run on it",
                          op);
  }
  int rank_, nranks_;
};

// A communicator on HubTransport, created as the NCCL init creates one; it must have taken the
// cuda-ipc route with every rank on this GPU.
tacoComm* createComm(const Case& k) {
  const tacoConfig_t cfg = configOf(k);
  tacoComm* c = nullptr;
  const tacoResult_t r = taco::commCreate(new HubTransport(g.rank, g.P), &cfg, true, &c);  // owns the transport
  if (r != tacoSuccess)
    childFail("creating a communicator (%s %s): %s: %s", taco::algoName(k.algo), k.codec, tacoGetErrorString(r),
              tacoGetLastError(nullptr));
  if (c->peer == nullptr || strcmp(c->peer->route, "cuda-ipc") != 0)
    childFail("the communicator has no cuda-ipc peer memory (route %s; TACO_DEBUG=INFO says why)",
              c->peer != nullptr ? c->peer->route : "none");
  if (c->peer->ranksPerDevice != g.P)
    childFail("peer memory counts %d ranks on this GPU, but all %d are", c->peer->ranksPerDevice, g.P);
  return c;
}

void releaseComms();

// The communicator of this configuration; the previous one is destroyed first (the cases come
// grouped by configuration), so creation and destruction run many times too.
tacoComm* commFor(const Case& k) {
  if (g.comms.count(configKey(k)) == 0) releaseComms();
  tacoComm*& c = g.comms[configKey(k)];
  if (c == nullptr) c = createComm(k);
  return c;
}

// Destroys the cached communicators. Every rank's kernels have finished: each rank's last
// result round waited for all of them.
void releaseComms() {
  for (auto& kv : g.comms) {
    const tacoResult_t r = tacoCommDestroy(kv.second);
    if (r != tacoSuccess) childFail("tacoCommDestroy: %s: %s", tacoGetErrorString(r), tacoGetLastError(nullptr));
  }
  g.comms.clear();
}

// Which eager call's output a graph replay or a burst call must reproduce: the configuration,
// dtype, count and input.
std::string eagerKey(const Case& k) {
  return format("%d %s %zu %d %zu %u", k.algo, k.codec, k.chunkBytes, (int)k.dtype, k.count, k.variant);
}

// A burst's call i: its count and input (kBurstCalls).
Case burstCall(const Case& k, int i) {
  Case c = k;
  c.kind = kCall;
  c.count = (i % 2 == 1 && k.count2 != 0) ? k.count2 : k.count;
  c.count2 = 0;
  c.variant = 1 + (uint32_t)(i % kGraphVariants);
  return c;
}

const std::vector<uint8_t>& inputFor(const Case& k) {
  auto key = std::make_tuple((int)k.dtype, k.count, k.variant);
  auto it = g.inputs.find(key);
  if (it == g.inputs.end()) it = g.inputs.emplace(key, makeInput(k.dtype, k.count, g.rank, k.variant)).first;
  return it->second;
}

uint32_t readDeviceWord(const char* p) {
  uint32_t v = 0;
  CUDA_OR_FAIL(cudaMemcpy(&v, p, 4, cudaMemcpyDeviceToHost));
  return v;
}

// This rank's peer epoch word: a call of n chunks advances it by n (coll/peer_launch.h,
// peerNextEpoch).
uint32_t epochOf(const tacoComm* c) {
  return readDeviceWord(c->peer->base[c->rank] + taco::kCtlEpoch * taco::kPeerLine);
}

const char* flagAddress(const tacoComm* c, int phase, int src) {
  return c->peer->base[c->rank] + taco::kFlagsOffset + ((size_t)phase * taco::kMaxPeerRanks + src) * taco::kPeerLine;
}

size_t launchesOf(const tacoComm* c, const Case& k) {
  return taco::peerPlan(k.algo, c->codec, k.count, k.dtype, g.P, c->peer->bytes).nChunks;
}

// How far one call of case k advances the epoch word.
size_t epochsOf(const tacoComm* c, const Case& k) { return launchesOf(c, k); }

void sendResult(size_t index, const uint8_t* out, size_t bytes, std::vector<uint64_t> digests,
                const std::string& note) {
  ResultHead h{};
  h.caseIndex = (uint32_t)index;
  h.bytes = bytes;
  if (out != nullptr) {
    digests = blockDigests(out, bytes);
    h.overall = digest(out, bytes);
    h.hasFull = bytes <= kFullBytes;
  }
  h.nDigests = (uint32_t)digests.size();
  h.noteBytes = (uint32_t)note.size();
  std::vector<uint8_t> msg(sizeof(h) + digests.size() * 8 + (h.hasFull ? bytes : 0) + note.size());
  uint8_t* p = msg.data();
  memcpy(p, &h, sizeof(h)), p += sizeof(h);
  if (!digests.empty()) memcpy(p, digests.data(), digests.size() * 8), p += digests.size() * 8;
  if (h.hasFull && bytes > 0) memcpy(p, out, bytes), p += bytes;
  if (!note.empty()) memcpy(p, note.data(), note.size());
  hubSend(kMsgResult, msg.data(), msg.size());
  char verdict = 0;
  if (!readAll(g.fd, &verdict, 1) || verdict != 1) _exit(1);  // the parent gave up on this world
}

void checkHealthy(tacoComm* c, const char* when) {
  tacoResult_t ae = tacoInternalError;
  const tacoResult_t r = tacoCommGetAsyncError(c, &ae);
  if (r != tacoSuccess || ae != tacoSuccess)
    childFail("%s: tacoCommGetAsyncError gave %s / %s", when, tacoGetErrorString(r), tacoGetErrorString(ae));
}

std::string firstDifference(const uint8_t* got, const uint8_t* want, size_t bytes, tacoDataType_t dt) {
  const size_t eb = dtypeSize(dt);
  for (size_t i = 0; i < bytes; i += eb)
    if (memcmp(got + i, want + i, eb) != 0)
      return format("element %zu is %s, expected %s", i / eb, elementText(got + i, dt).c_str(),
                    elementText(want + i, dt).c_str());
  return "no difference";
}

void runCall(size_t index, const Case& k) {
  tacoComm* c = commFor(k);
  const std::string what = describe(k, g.P);
  const size_t bytes = k.count * dtypeSize(k.dtype);
  const std::vector<uint8_t>& in = inputFor(k);
  void* send = g.dA;
  void* recv = k.inplace ? g.dA : g.dB;
  // On the call's stream: the legacy stream is not ordered with it (non-blocking), and a copy
  // from pageable memory may return before it lands.
  CUDA_OR_FAIL(cudaMemcpyAsync(send, in.data(), bytes, cudaMemcpyHostToDevice, g.stream));
  if (!k.inplace) CUDA_OR_FAIL(cudaMemsetAsync(recv, 0xa5, bytes, g.stream));  // an element never written cannot pass
  int algo = -1;
  tacoResult_t r = tacoCommAllReduceAlgo(c, k.count, k.dtype, &algo);
  if (r != tacoSuccess || algo != k.algo)
    childFail("%s: tacoCommAllReduceAlgo gave %s (algo %d): %s", what.c_str(), tacoGetErrorString(r), algo,
              tacoGetLastError(c));
  const uint32_t e0 = epochOf(c);
  r = tacoAllReduce(send, recv, k.count, k.dtype, tacoSum, c, g.stream);
  if (r != tacoSuccess)
    childFail("%s: tacoAllReduce returned %s: %s", what.c_str(), tacoGetErrorString(r), tacoGetLastError(c));
  CUDA_OR_FAIL(cudaStreamSynchronize(g.stream));
  checkHealthy(c, what.c_str());
  // The peer kernels ran, one launch per chunk of the plan: not a fallback.
  const uint32_t advanced = epochOf(c) - e0;
  if (advanced != epochsOf(c, k))
    childFail("%s: the peer kernels advanced the epoch by %u, the plan's %zu launches by %zu", what.c_str(),
              advanced, launchesOf(c, k), epochsOf(c, k));
  std::vector<uint8_t> out(bytes);
  CUDA_OR_FAIL(cudaMemcpy(out.data(), recv, bytes, cudaMemcpyDeviceToHost));
  if (!k.inplace) {
    std::vector<uint8_t> after(bytes);
    CUDA_OR_FAIL(cudaMemcpy(after.data(), send, bytes, cudaMemcpyDeviceToHost));
    if (after != in)
      childFail("%s: sendbuff changed: %s", what.c_str(),
                firstDifference(after.data(), in.data(), bytes, k.dtype).c_str());
  }
  if (k.variant >= 1 && k.variant <= (uint32_t)kGraphVariants && k.world == kWorldMain) g.eager[eagerKey(k)] = out;
  sendResult(index, out.data(), bytes, {}, "");
}

// The call captured once; every replay is a new call (the epochs live in device memory), on
// the input copied in before it: inputs 1, 2, 3, 1, ... Each replay must give the eager bits.
void runGraph(size_t index, const Case& k) {
  tacoComm* c = commFor(k);
  const size_t bytes = k.count * dtypeSize(k.dtype);
  std::vector<uint8_t*> pinned(kGraphVariants + 1, nullptr);  // inputs 1..3, then the output
  for (int v = 0; v <= kGraphVariants; ++v) CUDA_OR_FAIL(cudaMallocHost(reinterpret_cast<void**>(&pinned[v]), bytes));
  for (int v = 1; v <= kGraphVariants; ++v) {
    Case in = k;
    in.variant = (uint32_t)v;
    memcpy(pinned[v - 1], inputFor(in).data(), bytes);
    if (g.eager.count(eagerKey(in)) == 0) childFail("graph: the eager output of input %d is missing", v);
  }
  uint8_t* out = pinned[kGraphVariants];
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CUDA_OR_FAIL(cudaStreamBeginCapture(g.stream, cudaStreamCaptureModeThreadLocal));
  const tacoResult_t r = tacoAllReduce(g.dA, g.dB, k.count, k.dtype, tacoSum, c, g.stream);
  const cudaError_t ec = cudaStreamEndCapture(g.stream, &graph);
  if (r != tacoSuccess)
    childFail("graph: tacoAllReduce under capture returned %s: %s", tacoGetErrorString(r), tacoGetLastError(c));
  CUDA_OR_FAIL(ec);
  CUDA_OR_FAIL(cudaGraphInstantiate(&exec, graph, 0));
  const uint32_t e0 = epochOf(c);
  std::vector<uint64_t> digests;
  for (int i = 0; i < kGraphReplays; ++i) {
    const int v = 1 + i % kGraphVariants;
    CUDA_OR_FAIL(cudaMemcpyAsync(g.dA, pinned[v - 1], bytes, cudaMemcpyHostToDevice, g.stream));
    CUDA_OR_FAIL(cudaMemsetAsync(g.dB, (i * 37 + 1) & 0xff, bytes, g.stream));
    CUDA_OR_FAIL(cudaGraphLaunch(exec, g.stream));
    CUDA_OR_FAIL(cudaMemcpyAsync(out, g.dB, bytes, cudaMemcpyDeviceToHost, g.stream));
    CUDA_OR_FAIL(cudaStreamSynchronize(g.stream));
    Case in = k;
    in.variant = (uint32_t)v;
    const std::vector<uint8_t>& want = g.eager[eagerKey(in)];
    if (memcmp(out, want.data(), bytes) != 0)
      childFail("graph replay %d (input %d): %s", i, v, firstDifference(out, want.data(), bytes, k.dtype).c_str());
    digests.push_back(digest(out, bytes));
  }
  checkHealthy(c, "graph replays");
  const uint32_t advanced = epochOf(c) - e0;
  if (advanced != kGraphReplays * epochsOf(c, k))
    childFail("graph: %d replays advanced the epoch by %u, expected %zu", kGraphReplays, advanced,
              kGraphReplays * epochsOf(c, k));
  // An eager call after the replays still agrees (the epoch moved on in device memory).
  CUDA_OR_FAIL(cudaMemcpyAsync(g.dA, pinned[0], bytes, cudaMemcpyHostToDevice, g.stream));
  const tacoResult_t r2 = tacoAllReduce(g.dA, g.dB, k.count, k.dtype, tacoSum, c, g.stream);
  if (r2 != tacoSuccess) childFail("graph: the eager call after the replays: %s", tacoGetLastError(c));
  CUDA_OR_FAIL(cudaMemcpyAsync(out, g.dB, bytes, cudaMemcpyDeviceToHost, g.stream));
  CUDA_OR_FAIL(cudaStreamSynchronize(g.stream));
  Case first = k;
  first.variant = 1;
  const std::vector<uint8_t>& want1 = g.eager[eagerKey(first)];
  if (memcmp(out, want1.data(), bytes) != 0)
    childFail("graph: the eager call after the replays: %s",
              firstDifference(out, want1.data(), bytes, k.dtype).c_str());
  CUDA_OR_FAIL(cudaGraphExecDestroy(exec));
  CUDA_OR_FAIL(cudaGraphDestroy(graph));
  for (uint8_t* p : pinned) CUDA_OR_FAIL(cudaFreeHost(p));
  sendResult(index, nullptr, bytes, digests, "");
}

// kBurstCalls calls enqueued back to back, each reading its own input and writing its own output,
// with no synchronisation until the last: the ranks drift apart (several processes on one GPU
// time-slice), and a rank's next call must not touch scratch a slower rank still reads. Every
// call must give its eager call's bits.
void runBurst(size_t index, const Case& k) {
  tacoComm* c = commFor(k);
  std::map<std::string, void*> inputs;  // by eagerKey: inputs 1..3 of both counts, on the device
  std::vector<void*> outputs(kBurstCalls, nullptr);
  size_t epochs = 0;
  for (int i = 0; i < kBurstCalls; ++i) {
    const Case call = burstCall(k, i);
    const size_t bytes = call.count * dtypeSize(call.dtype);
    void*& in = inputs[eagerKey(call)];
    if (in == nullptr) {
      CUDA_OR_FAIL(cudaMalloc(&in, bytes));
      CUDA_OR_FAIL(cudaMemcpyAsync(in, inputFor(call).data(), bytes, cudaMemcpyHostToDevice, g.stream));
      if (g.eager.count(eagerKey(call)) == 0)
        childFail("burst: the eager output of count %zu, input %u is missing", call.count, call.variant);
    }
    CUDA_OR_FAIL(cudaMalloc(&outputs[i], bytes));
    CUDA_OR_FAIL(cudaMemsetAsync(outputs[i], 0xa5, bytes, g.stream));  // an element never written cannot pass
    epochs += epochsOf(c, call);
  }
  CUDA_OR_FAIL(cudaStreamSynchronize(g.stream));  // (the copies are on the calls' stream: see runCall)
  barrier();  // every rank's buffers are ready: the calls start together, then drift
  const uint32_t e0 = epochOf(c);
  for (int i = 0; i < kBurstCalls; ++i) {
    const Case call = burstCall(k, i);
    const tacoResult_t r = tacoAllReduce(inputs[eagerKey(call)], outputs[i], call.count, call.dtype, tacoSum, c,
                                         g.stream);
    if (r != tacoSuccess) childFail("burst call %d: tacoAllReduce returned %s: %s", i, tacoGetErrorString(r),
                                    tacoGetLastError(c));
  }
  CUDA_OR_FAIL(cudaStreamSynchronize(g.stream));
  checkHealthy(c, "burst");
  const uint32_t advanced = epochOf(c) - e0;
  if (advanced != epochs)
    childFail("burst: %d calls advanced the epoch by %u, expected %zu", kBurstCalls, advanced, epochs);
  std::vector<uint64_t> digests;
  for (int i = 0; i < kBurstCalls; ++i) {
    const Case call = burstCall(k, i);
    const size_t bytes = call.count * dtypeSize(call.dtype);
    std::vector<uint8_t> out(bytes);
    CUDA_OR_FAIL(cudaMemcpy(out.data(), outputs[i], bytes, cudaMemcpyDeviceToHost));
    const std::vector<uint8_t>& want = g.eager[eagerKey(call)];
    if (out != want)
      childFail("burst call %d (count %zu, input %u): %s", i, call.count, call.variant,
                firstDifference(out.data(), want.data(), bytes, call.dtype).c_str());
    digests.push_back(digest(out.data(), bytes));
    CUDA_OR_FAIL(cudaFree(outputs[i]));
  }
  for (auto& kv : inputs) CUDA_OR_FAIL(cudaFree(kv.second));
  sendResult(index, nullptr, 0, digests, "");
}

// A communicator whose rank `skip` never arrives (TACO_FAULT_SKIP_RANK is read at creation).
tacoComm* createSkipping(const Case& k, int skip) {
  setenv("TACO_FAULT_SKIP_RANK", std::to_string(skip).c_str(), 1);
  tacoComm* c = createComm(k);
  unsetenv("TACO_FAULT_SKIP_RANK");
  if (c->peer->faultSkipRank != skip) childFail("TACO_FAULT_SKIP_RANK=%d was not taken up", skip);
  return c;
}

// Polls this rank's scratch until every other rank has raised flag 0 of the epoch (its scatter
// stores, to every rank, are then complete). False after 60 s.
bool othersArrived(const tacoComm* c, uint32_t target) {
  const auto t0 = Clock::now();
  for (int q = 0; q < g.P; ++q) {
    if (q == g.rank) continue;
    while ((int32_t)(readDeviceWord(flagAddress(c, 0, q)) - target) < 0) {
      if (secondsSince(t0) > 60) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  return true;
}

void uploadInput(const Case& k) {
  const std::vector<uint8_t>& in = inputFor(k);
  CUDA_OR_FAIL(cudaMemcpyAsync(g.dA, in.data(), in.size(), cudaMemcpyHostToDevice, g.stream));
  CUDA_OR_FAIL(cudaStreamSynchronize(g.stream));
}

// Rank P-1 skips; the others' kernels give up after TACO_WAIT_TIMEOUT_S=3 and say so.
void runTimeout(size_t index, const Case& k) {
  releaseComms();
  const int skip = g.P - 1;
  tacoComm* c = createSkipping(k, skip);
  uploadInput(k);
  const auto t0 = Clock::now();
  tacoResult_t r = tacoAllReduce(g.dA, g.dB, k.count, k.dtype, tacoSum, c, g.stream);
  if (r != tacoSuccess) childFail("timeout: the call returned %s: %s", tacoGetErrorString(r), tacoGetLastError(c));
  CUDA_OR_FAIL(cudaStreamSynchronize(g.stream));  // the kernel gave up cleanly (no trap)
  const double waited = secondsSince(t0);
  tacoResult_t ae = tacoInternalError;
  r = tacoCommGetAsyncError(c, &ae);
  if (r != tacoSuccess) childFail("timeout: tacoCommGetAsyncError returned %s", tacoGetErrorString(r));
  std::string note;
  if (g.rank != skip) {
    if (ae != tacoRemoteError)
      childFail("timeout: after the wait tacoCommGetAsyncError reports %s, not tacoRemoteError",
                tacoGetErrorString(ae));
    if (waited < 2.5 || waited > 60)
      childFail("timeout: the call took %.2f s with TACO_WAIT_TIMEOUT_S=3", waited);
    r = tacoAllReduce(g.dA, g.dB, k.count, k.dtype, tacoSum, c, g.stream);
    const std::string msg = tacoGetLastError(c);
    if (r != tacoRemoteError || msg.find("gave up") == std::string::npos || msg.find("timed out") == std::string::npos)
      childFail("timeout: the next call returned %s with '%s' (expected tacoRemoteError saying it gave up, timed out)",
                tacoGetErrorString(r), msg.c_str());
    note = format("gave up after %.1f s, next call refused", waited);
  } else if (ae != tacoSuccess) {
    childFail("timeout: the skipping rank reports the asynchronous error %s", tacoGetErrorString(ae));
  }
  barrier();  // every rank's kernel has returned before any scratch is freed
  r = tacoCommDestroy(c);
  if (r != tacoSuccess)
    childFail("timeout: tacoCommDestroy returned %s: %s", tacoGetErrorString(r), tacoGetLastError(nullptr));
  sendResult(index, nullptr, 0, {}, note);
}

// Rank P-1 skips; the others end their wait with tacoCommAbort from another thread
// (TACO_WAIT_TIMEOUT_S=120 in this world, so only the abort can end it in time). No rank frees
// its scratch before every other rank's scatter stores into it are done: the skipping rank,
// whose kernel returned at once, sees every other rank's flag 0 arrive, then a barrier lets the
// others abort: their kernels are in the wait for the skipping rank by then.
void runAbort(size_t index, const Case& k) {
  releaseComms();
  const int skip = g.P - 1;
  tacoComm* c = createSkipping(k, skip);
  uploadInput(k);
  const uint32_t target = epochOf(c) + 1;
  const auto t0 = Clock::now();
  tacoResult_t r = tacoAllReduce(g.dA, g.dB, k.count, k.dtype, tacoSum, c, g.stream);
  if (r != tacoSuccess) childFail("abort: the call returned %s: %s", tacoGetErrorString(r), tacoGetLastError(c));
  std::string note;
  if (g.rank != skip) {
    tacoResult_t aborted = tacoInternalError;
    std::string abortError;
    bool reached = false;
    std::thread aborter([&] {
      reached = hubBarrier();  // the main thread waits on the stream meanwhile: the hub is this thread's
      aborted = tacoCommAbort(c);
      abortError = tacoGetLastError(nullptr);  // this thread's
    });
    const cudaError_t e = cudaStreamSynchronize(g.stream);
    const double waited = secondsSince(t0);
    aborter.join();
    if (!reached) _exit(1);  // the parent is gone
    if (e != cudaSuccess) childFail("abort: the stream reports '%s' after the abort", cudaGetErrorString(e));
    if (aborted != tacoSuccess)
      childFail("abort: tacoCommAbort from another thread returned %s: %s", tacoGetErrorString(aborted),
                abortError.c_str());
    if (waited > 60) childFail("abort: the wait ended after %.1f s: the abort did not end it", waited);
    note = format("aborted from another thread, the wait ended after %.1f s", waited);
  } else {
    CUDA_OR_FAIL(cudaStreamSynchronize(g.stream));
    if (!othersArrived(c, target))
      childFail("abort: the other ranks' flags never arrived in the skipping rank's scratch");
    barrier();
    r = tacoCommDestroy(c);
    if (r != tacoSuccess) childFail("abort: tacoCommDestroy returned %s", tacoGetErrorString(r));
  }
  barrier();
  sendResult(index, nullptr, 0, {}, note);
}

// The cache file of the tune world, in a directory the parent made (before forking) and removes.
std::string gTuneDir;
std::string tuneFile() { return gTuneDir + "/tune.json"; }

// The text of field `name` of a flat JSON object: a string (with its quotes) or an array.
std::string jsonField(const std::string& json, const char* name) {
  const std::string key = std::string("\"") + name + "\": ";
  size_t at = json.find(key);
  if (at == std::string::npos) return "";
  at += key.size();
  const size_t end = json[at] == '"' ? json.find('"', at + 1) : json[at] == '[' ? json.find(']', at) : std::string::npos;
  return end == std::string::npos ? "" : json.substr(at, end - at + 1);
}

// The tuner between processes (the tune world): tacoCommTune on a communicator whose peer memory
// came by default; TACO_TUNE_FAULT=fused corrupts rank 0's check only, so every rank must learn
// the demotion from the agreement. The note carries what every rank must hold alike (the table's
// hash and choices, the algorithm of the AllReduce after it); the output, its bits.
void runTune(size_t index, const Case& k) {
  tacoComm* c = commFor(k);
  const std::string what = describe(k, g.P);
  tacoResult_t r = tacoCommTune(c, k.dtype, g.stream);
  if (r != tacoSuccess) childFail("%s: tacoCommTune returned %s: %s", what.c_str(), tacoGetErrorString(r), tacoGetLastError(c));
  const char* json = nullptr;
  r = tacoCommTuneTable(c, k.dtype, &json);
  if (r != tacoSuccess || json == nullptr) childFail("%s: no table after tacoCommTune: %s", what.c_str(), tacoGetLastError(c));
  const std::string t = json;
  const std::string hash = jsonField(t, "hash"), choice = jsonField(t, "choice"), demoted = jsonField(t, "demoted");
  if (hash.size() != 18 || choice.empty() || jsonField(t, "source") != "\"measured\"")
    childFail("%s: the table lacks its hash, choices or source: %s", what.c_str(), t.c_str());
  if (t.find("route=cuda-ipc;") == std::string::npos)
    childFail("%s: the table's key does not name the cuda-ipc route: %s", what.c_str(), jsonField(t, "key").c_str());
  if (demoted.find("\"fused\"") == std::string::npos)
    childFail("%s: the fused two-shot was made wrong on rank 0 (TACO_TUNE_FAULT) but rank %d does not demote it: %s",
              what.c_str(), g.rank, demoted.c_str());
  if (choice.find("\"fused\"") != std::string::npos)
    childFail("%s: the demoted fused two-shot is chosen: %s", what.c_str(), choice.c_str());
  // Between processes the one-shots are not chosen automatically (algoAutoExcluded): never timed.
  if (choice.find("\"oneshot") != std::string::npos)
    childFail("%s: a one-shot is chosen between processes: %s", what.c_str(), choice.c_str());
  if (g.rank == 0) {  // a demotion by TACO_TUNE_FAULT may not recur: the table is used, not cached
    FILE* f = fopen(tuneFile().c_str(), "rb");
    std::string text;
    char buf[4096];
    size_t n;
    while (f != nullptr && (n = fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
    if (f != nullptr) fclose(f);
    if (text.find(hash) != std::string::npos)
      childFail("%s: the cache %s holds a table demoted by TACO_TUNE_FAULT (hash %s)", what.c_str(),
                tuneFile().c_str(), hash.c_str());
  }
  int algo = -1;
  r = tacoCommAllReduceAlgo(c, k.count, k.dtype, &algo);
  if (r != tacoSuccess || algo == tacoAlgoFused || algo == tacoAlgoOneShot || algo == tacoAlgoOneShotRaw)
    childFail("%s: tacoCommAllReduceAlgo gave %s, algo %s", what.c_str(), tacoGetErrorString(r), taco::algoName(algo));
  const size_t bytes = k.count * dtypeSize(k.dtype);
  const std::vector<uint8_t>& in = inputFor(k);
  CUDA_OR_FAIL(cudaMemcpyAsync(g.dA, in.data(), bytes, cudaMemcpyHostToDevice, g.stream));
  CUDA_OR_FAIL(cudaMemsetAsync(g.dB, 0xa5, bytes, g.stream));
  r = tacoAllReduce(g.dA, g.dB, k.count, k.dtype, tacoSum, c, g.stream);
  if (r != tacoSuccess) childFail("%s: tacoAllReduce returned %s: %s", what.c_str(), tacoGetErrorString(r), tacoGetLastError(c));
  CUDA_OR_FAIL(cudaStreamSynchronize(g.stream));
  checkHealthy(c, what.c_str());
  std::vector<uint8_t> out(bytes);
  CUDA_OR_FAIL(cudaMemcpy(out.data(), g.dB, bytes, cudaMemcpyDeviceToHost));
  sendResult(index, out.data(), bytes, {}, "hash " + hash + ", choice " + choice + ", ran " + taco::algoName(algo));
}

[[noreturn]] void childMain(World w, int rank, int P, int fd, const std::vector<Case>& cases) {
  g.fd = fd;
  g.rank = rank;
  g.P = P;
  g.world = w;
  barrier();  // the parent runs one world at a time: this waits for our turn
  // Read once, when the library first looks: before any library call. The tune world takes peer
  // memory as it comes by default.
  if (w == kWorldTune) {
    unsetenv("TACO_PEER_MEMORY");
    setenv("TACO_TUNE", "auto", 1);
    setenv("TACO_TUNE_FILE", tuneFile().c_str(), 1);
    setenv("TACO_TUNE_MAX_BYTES", "256K", 1);  // host-staged plain and staged paths: keep it short
    setenv("TACO_TUNE_FAULT", "fused", 1);
  } else {
    setenv("TACO_PEER_MEMORY", "1", 1);
    unsetenv("TACO_TUNE_FAULT");
  }
  setenv("TACO_WAIT_TIMEOUT_S", w == kWorldTimeout ? "3" : w == kWorldAbort ? "120" : "60", 1);
  unsetenv("TACO_FAULT_SKIP_RANK");
  if (cudaSetDevice(0) != cudaSuccess || cudaFree(nullptr) != cudaSuccess)
    childFail("no CUDA context on device 0 ('%s'): several processes on one GPU need the Default compute mode "
              "(nvidia-smi -q | grep 'Compute Mode')",
              cudaGetErrorString(cudaGetLastError()));
  CUDA_OR_FAIL(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking));
  size_t most = 0;
  for (const Case& k : cases)
    if (k.world == w) most = std::max(most, k.count * dtypeSize(k.dtype));
  CUDA_OR_FAIL(cudaMalloc(&g.dA, most));
  CUDA_OR_FAIL(cudaMalloc(&g.dB, most));
  for (size_t i = 0; i < cases.size(); ++i) {
    if (cases[i].world != w) continue;
    switch (cases[i].kind) {
      case kCall: runCall(i, cases[i]); break;
      case kGraph: runGraph(i, cases[i]); break;
      case kBurst: runBurst(i, cases[i]); break;
      case kTimeout: runTimeout(i, cases[i]); break;
      case kAbort: runAbort(i, cases[i]); break;
      case kTune: runTune(i, cases[i]); break;
    }
  }
  releaseComms();
  CUDA_OR_FAIL(cudaFree(g.dA));
  CUDA_OR_FAIL(cudaFree(g.dB));
  CUDA_OR_FAIL(cudaStreamDestroy(g.stream));
  hubSend(kMsgDone, nullptr, 0);
  _exit(0);
}

// =========================================================================== the parent

struct Expected {
  std::vector<uint64_t> digests;
  uint64_t overall = 0;
  std::vector<uint8_t> full;  // when the output is at most kFullBytes
};

bool cudaOk(cudaError_t e, const char* what, std::string* why) {
  if (e == cudaSuccess) return true;
  *why = format("%s: %s", what, cudaGetErrorString(e));
  return false;
}

// Every kCall case's output on a loopback world of P ranks in this process, with the same
// configuration: the oracle. Also checks that the loopback ranks agree (rank 0 and P-1).
bool computeExpected(int P, const std::vector<Case>& cases, std::vector<Expected>& expected, std::string* why) {
  setenv("TACO_PEER_MEMORY", "loopback", 1);
  unsetenv("TACO_FAULT_SKIP_RANK");
  expected.assign(cases.size(), Expected());
  if (!cudaOk(cudaSetDevice(0), "cudaSetDevice(0)", why)) return false;
  size_t most = 0;
  for (const Case& k : cases) most = std::max(most, k.count * dtypeSize(k.dtype));
  std::vector<void*> send((size_t)P, nullptr), recv((size_t)P, nullptr);
  for (int r = 0; r < P; ++r)
    if (!cudaOk(cudaMalloc(&send[r], most), "cudaMalloc", why) ||
        !cudaOk(cudaMalloc(&recv[r], most), "cudaMalloc", why))
      return false;
  cudaStream_t s = nullptr;
  if (!cudaOk(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate", why)) return false;
  std::map<ConfigKey, std::vector<tacoComm_t>> worlds;
  std::map<std::tuple<int, size_t, uint32_t>, std::vector<std::vector<uint8_t>>> inputs;
  bool ok = true;
  for (size_t i = 0; i < cases.size() && ok; ++i) {
    const Case& k = cases[i];
    if (k.kind != kCall) continue;
    if (worlds.count(configKey(k)) == 0) {  // one world at a time
      for (auto& kv : worlds)
        for (tacoComm_t c : kv.second)
          if (c != nullptr) tacoCommDestroy(c);
      worlds.clear();
    }
    std::vector<tacoComm_t>& comms = worlds[configKey(k)];
    if (comms.empty()) {
      comms.assign((size_t)P, nullptr);
      const tacoConfig_t cfg = configOf(k);
      const tacoResult_t r = tacoCommInitLoopback(comms.data(), P, &cfg);
      if (r != tacoSuccess) {
        *why = format("tacoCommInitLoopback: %s", tacoGetLastError(nullptr));
        comms.clear();
        ok = false;
        break;
      }
    }
    auto& in = inputs[std::make_tuple((int)k.dtype, k.count, k.variant)];
    if (in.empty())
      for (int r = 0; r < P; ++r) in.push_back(makeInput(k.dtype, k.count, r, k.variant));
    const size_t bytes = k.count * dtypeSize(k.dtype);
    for (int r = 0; r < P && ok; ++r) {
      // On the calls' stream (the legacy stream is not ordered with it).
      ok = cudaOk(cudaMemcpyAsync(send[r], in[r].data(), bytes, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync", why);
      if (ok && !k.inplace) ok = cudaOk(cudaMemsetAsync(recv[r], 0xa5, bytes, s), "cudaMemsetAsync", why);
    }
    if (!ok) break;
    int algo = -1;
    if (tacoCommAllReduceAlgo(comms[0], k.count, k.dtype, &algo) != tacoSuccess || algo != k.algo) {
      *why = format("loopback world: %s does not run %s: %s", describe(k, P).c_str(), taco::algoName(k.algo),
                    tacoGetLastError(comms[0]));
      ok = false;
      break;
    }
    tacoResult_t r = tacoGroupStart();
    for (int q = 0; q < P && r == tacoSuccess; ++q)
      r = tacoAllReduce(send[q], k.inplace ? send[q] : recv[q], k.count, k.dtype, tacoSum, comms[q], s);
    const tacoResult_t re = tacoGroupEnd();
    if (r == tacoSuccess) r = re;
    if (r != tacoSuccess) {
      *why = format("loopback world: %s: %s", describe(k, P).c_str(), tacoGetLastError(nullptr));
      ok = false;
      break;
    }
    if (!cudaOk(cudaStreamSynchronize(s), "loopback world: cudaStreamSynchronize", why)) {
      ok = false;
      break;
    }
    std::vector<uint8_t> out(bytes), last(bytes);
    const void* first = k.inplace ? send[0] : recv[0];
    const void* lastRank = k.inplace ? send[P - 1] : recv[P - 1];
    ok = cudaOk(cudaMemcpy(out.data(), first, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy", why) &&
         cudaOk(cudaMemcpy(last.data(), lastRank, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy", why);
    if (ok && out != last) {
      *why = format("loopback world: %s: rank %d differs from rank 0: %s", describe(k, P).c_str(), P - 1,
                    firstDifference(last.data(), out.data(), bytes, k.dtype).c_str());
      ok = false;
    }
    Expected& e = expected[i];
    e.digests = blockDigests(out.data(), bytes);
    e.overall = digest(out.data(), bytes);
    if (bytes <= kFullBytes) e.full = std::move(out);
  }
  for (auto& kv : worlds)
    for (tacoComm_t c : kv.second)
      if (c != nullptr) tacoCommDestroy(c);
  for (int r = 0; r < P; ++r) cudaFree(send[r]), cudaFree(recv[r]);
  cudaStreamDestroy(s);
  return ok;
}

struct Kid {
  pid_t pid = -1;
  int fd = -1;
  int rank = 0;
  bool reaped = false;
  int status = 0;
};

struct Msg {
  MsgHead head{};
  size_t got = 0;  // bytes of head + body read so far
  std::vector<uint8_t> body;
  bool complete() const { return got >= sizeof(head) && got == sizeof(head) + head.bytes; }
};

std::string exitText(int status) {
  if (WIFEXITED(status)) return format("exited with status %d", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return format("killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return format("ended with wait status %d", status);
}

// Waits up to `seconds` for a child to end.
bool reap(Kid& k, double seconds) {
  const auto t0 = Clock::now();
  while (!k.reaped) {
    const pid_t p = waitpid(k.pid, &k.status, WNOHANG);
    if (p == k.pid) k.reaped = true;
    else if (p < 0 && errno != EINTR) return false;
    else if (secondsSince(t0) > seconds) return false;
    else std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void killWorld(std::vector<Kid>& kids) {
  for (Kid& k : kids)
    if (!k.reaped) kill(k.pid, SIGKILL);
  for (Kid& k : kids)
    if (!k.reaped && !reap(k, 30)) fprintf(stderr, "ipc_world: child pid %d did not end after SIGKILL\n", (int)k.pid);
}

// One whole message from every child, or false with why: a child died, reported a failure, or
// sent nothing for `timeout` seconds.
bool collectRound(std::vector<Kid>& kids, std::vector<Msg>& msgs, double timeout, std::string* why) {
  const size_t n = kids.size();
  msgs.assign(n, Msg());
  const auto t0 = Clock::now();
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<size_t> who;
    for (size_t i = 0; i < n; ++i)
      if (!msgs[i].complete()) fds.push_back(pollfd{kids[i].fd, POLLIN, 0}), who.push_back(i);
    if (fds.empty()) return true;
    const double left = timeout - secondsSince(t0);
    if (left <= 0) {
      std::string ranks;
      for (size_t i : who) ranks += format("%s%d", ranks.empty() ? "" : ", ", kids[i].rank);
      *why = format("no answer for %.0f s from rank(s) %s (hung?)", timeout, ranks.c_str());
      return false;
    }
    const int rc = poll(fds.data(), fds.size(), (int)std::min(left * 1000 + 1, 1000.0));
    if (rc < 0 && errno != EINTR) {
      *why = format("poll: %s", strerror(errno));
      return false;
    }
    for (size_t j = 0; j < fds.size(); ++j) {
      if (fds[j].revents == 0) continue;
      Msg& m = msgs[who[j]];
      Kid& kid = kids[who[j]];
      uint8_t* dst;
      size_t want;
      if (m.got < sizeof(m.head)) {
        dst = reinterpret_cast<uint8_t*>(&m.head) + m.got;
        want = sizeof(m.head) - m.got;
      } else {
        dst = m.body.data() + (m.got - sizeof(m.head));
        want = sizeof(m.head) + m.head.bytes - m.got;
      }
      const ssize_t r = read(kid.fd, dst, want);
      if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (r <= 0) {
        reap(kid, 10);
        *why = format("rank %d (pid %d) %s", kid.rank, (int)kid.pid,
                      kid.reaped ? exitText(kid.status).c_str() : "closed its connection");
        return false;
      }
      m.got += (size_t)r;
      if (m.got == sizeof(m.head)) {
        if (m.head.magic != kMsgMagic || m.head.bytes > kMaxMsgBytes) {
          *why = format("rank %d sent a malformed message", kid.rank);
          return false;
        }
        m.body.resize(m.head.bytes);
      }
      if (m.complete() && m.head.kind == kMsgFail) {
        *why = std::string(m.body.begin(), m.body.end());
        return false;
      }
    }
  }
}

bool replyAll(std::vector<Kid>& kids, const void* p, size_t n, std::string* why) {
  for (Kid& k : kids) {
    const char* c = static_cast<const char*>(p);
    size_t left = n;
    const auto t0 = Clock::now();
    while (left > 0) {
      const ssize_t w = write(k.fd, c, left);
      if (w > 0) {
        c += w, left -= (size_t)w;
        continue;
      }
      if (w < 0 && (errno == EINTR || errno == EAGAIN) && secondsSince(t0) < 60) {
        pollfd pf{k.fd, POLLOUT, 0};
        poll(&pf, 1, 100);
        continue;
      }
      *why = format("writing to rank %d: %s", k.rank, w < 0 ? strerror(errno) : "connection closed");
      return false;
    }
  }
  return true;
}

struct Parsed {
  ResultHead head{};
  const uint64_t* digests = nullptr;
  const uint8_t* full = nullptr;
  std::string note;
};

bool parseResult(const Msg& m, Parsed* p) {
  if (m.body.size() < sizeof(ResultHead)) return false;
  memcpy(&p->head, m.body.data(), sizeof(ResultHead));
  const size_t need = sizeof(ResultHead) + (size_t)p->head.nDigests * 8 + (p->head.hasFull ? p->head.bytes : 0) +
                      p->head.noteBytes;
  if (m.body.size() != need) return false;
  const uint8_t* q = m.body.data() + sizeof(ResultHead);
  p->digests = reinterpret_cast<const uint64_t*>(q);
  q += (size_t)p->head.nDigests * 8;
  if (p->head.hasFull) p->full = q, q += p->head.bytes;
  p->note.assign(reinterpret_cast<const char*>(q), p->head.noteBytes);
  return true;
}

// Where two outputs first differ: the element when both are whole, else the first 64 KiB block.
std::string outputDifference(const Parsed& got, const std::vector<uint64_t>& wantDigests, const uint8_t* wantFull,
                             tacoDataType_t dt) {
  if (got.full != nullptr && wantFull != nullptr)
    return firstDifference(got.full, wantFull, got.head.bytes, dt);
  if (got.head.nDigests != wantDigests.size())
    return format("%u digests against %zu", got.head.nDigests, wantDigests.size());
  const size_t eb = dtypeSize(dt);
  for (size_t b = 0; b < wantDigests.size(); ++b)
    if (got.digests[b] != wantDigests[b])
      return format("first in elements [%zu, %zu)", b * kDigestBlock / eb,
                    std::min((b + 1) * kDigestBlock, (size_t)got.head.bytes) / eb);
  return "no difference";
}

struct Tally {
  int passed = 0, failed = 0;
};

// Judges one result round: every rank must hold the loopback world's bits (and so the same
// bits as every other rank); fault cases carry no bits, only the ranks' notes.
void judge(int P, const std::vector<Case>& cases, size_t index, const std::vector<Msg>& msgs,
           const std::vector<Expected>& expected, Tally* tally) {
  const Case& k = cases[index];
  std::vector<Parsed> res(msgs.size());
  std::string problem;
  for (size_t r = 0; r < msgs.size() && problem.empty(); ++r)
    if (!parseResult(msgs[r], &res[r]) || res[r].head.caseIndex != index)
      problem = format("rank %zu sent a malformed result", r);
  // The expected digest per block (kCall), per replay (kGraph: replay i ran on input 1 + i % 3) or
  // per call (kBurst: burstCall).
  std::vector<uint64_t> want;
  const uint8_t* wantFull = nullptr;
  if (problem.empty() && k.kind == kCall) {
    want = expected[index].digests;
    if (!expected[index].full.empty()) wantFull = expected[index].full.data();
  }
  // The loopback world's digest of the eager call whose bits `call` (a replay, a burst call) must give.
  auto wantEager = [&](const Case& call) {
    for (size_t j = 0; j < cases.size(); ++j)
      if (cases[j].kind == kCall && cases[j].world == k.world && eagerKey(cases[j]) == eagerKey(call)) {
        want.push_back(expected[j].overall);
        return;
      }
    problem = format("no eager case for count %zu, input %u", call.count, call.variant);
  };
  if (problem.empty() && k.kind == kGraph) {
    for (int i = 0; i < kGraphReplays && problem.empty(); ++i) {
      Case replay = k;
      replay.variant = 1 + (uint32_t)(i % kGraphVariants);
      wantEager(replay);
    }
  }
  if (problem.empty() && k.kind == kBurst)
    for (int i = 0; i < kBurstCalls && problem.empty(); ++i) wantEager(burstCall(k, i));
  std::string wrong;  // ranks whose bits differ from the loopback world's
  const bool bits = k.kind == kCall || k.kind == kGraph || k.kind == kBurst;
  for (size_t r = 0; r < res.size() && problem.empty() && bits; ++r) {
    const Parsed& got = res[r];
    bool same = got.head.nDigests == want.size() && memcmp(got.digests, want.data(), want.size() * 8) == 0;
    if (k.kind == kCall) same = same && got.head.overall == expected[index].overall;
    if (same) continue;
    if (wrong.empty()) {
      if (k.kind == kGraph) {
        int i = 0;
        while (i < kGraphReplays && i < (int)got.head.nDigests && got.digests[i] == want[(size_t)i]) ++i;
        wrong = format("rank %zu: replay %d (input %d) differs from the loopback world", r, i, 1 + i % kGraphVariants);
      } else if (k.kind == kBurst) {
        int i = 0;
        while (i < kBurstCalls && i < (int)got.head.nDigests && got.digests[i] == want[(size_t)i]) ++i;
        wrong = format("rank %zu: burst call %d differs from the loopback world", r, i);
      } else {
        wrong = format("rank %zu differs from the loopback world: %s", r,
                       outputDifference(got, want, wantFull, k.dtype).c_str());
      }
    } else {
      wrong += format("; rank %zu too", r);
    }
  }
  // The tune world: no oracle for the table (it is measured); every rank must hold what rank 0
  // holds: the same table (hash, choices), the same algorithm, the same bits.
  for (size_t r = 0; r < res.size() && problem.empty() && k.kind == kTune; ++r) {
    if (res[r].note.empty() || res[r].note != res[0].note)
      problem = format("rank %zu's table or algorithm (%s) is not rank 0's (%s)", r, res[r].note.c_str(),
                       res[0].note.c_str());
    else if (res[r].head.bytes != res[0].head.bytes || res[r].head.overall != res[0].head.overall)
      problem = format("rank %zu's AllReduce output differs from rank 0's", r);
  }
  if (problem.empty()) problem = wrong;
  std::string note;
  for (size_t r = 0; r < res.size() && (k.kind != kTune || r == 0); ++r)
    if (!res[r].note.empty()) note += format("%s rank %zu: %s", note.empty() ? "" : ";", r, res[r].note.c_str());
  if (problem.empty()) {
    ++tally->passed;
    printf("ok    %s%s%s\n", describe(k, P).c_str(), note.empty() ? "" : " --", note.c_str());
  } else {
    ++tally->failed;
    printf("FAIL  %s: %s\n", describe(k, P).c_str(), problem.c_str());
  }
}

// Serves one world until its children are done: host all-gathers, results, failures.
void runWorld(World w, int P, std::vector<Kid>& kids, const std::vector<Case>& cases,
              const std::vector<Expected>& expected, double roundTimeout, Tally* tally) {
  const auto t0 = Clock::now();
  size_t want = 0, judged = 0, next = 0;  // next: the case index the world must report next
  for (const Case& k : cases) want += k.world == w;
  auto nextCase = [&](size_t from) {
    while (from < cases.size() && cases[from].world != w) ++from;
    return from;
  };
  next = nextCase(0);
  std::string why;
  std::vector<Msg> msgs;
  for (;;) {
    if (!collectRound(kids, msgs, roundTimeout, &why)) break;
    const uint32_t kind = msgs[0].head.kind;
    bool agree = true;
    for (const Msg& m : msgs) agree &= m.head.kind == kind && m.head.bytes == msgs[0].head.bytes;
    if (kind == kMsgResult) {
      agree = true;  // results differ in size when outputs differ; judge() compares them
      for (const Msg& m : msgs) agree &= m.head.kind == kind;
    }
    if (!agree) {
      why = "protocol: the ranks sent different kinds or sizes of message in one round";
      break;
    }
    if (kind == kMsgGather) {
      std::vector<uint8_t> all;
      for (const Msg& m : msgs) all.insert(all.end(), m.body.begin(), m.body.end());
      if (!replyAll(kids, all.data(), all.size(), &why)) break;
    } else if (kind == kMsgResult) {
      uint32_t index = UINT32_MAX;
      if (msgs[0].body.size() >= sizeof(ResultHead)) memcpy(&index, msgs[0].body.data(), sizeof(index));
      if (index != next) {
        why = format("protocol: a result for case %u, expected case %zu", index, next);
        break;
      }
      judge(P, cases, index, msgs, expected, tally);
      ++judged;
      next = nextCase(next + 1);
      const char verdict = 1;
      if (!replyAll(kids, &verdict, 1, &why)) break;
    } else if (kind == kMsgDone) {
      for (Kid& k : kids)
        if (!reap(k, 30) || !WIFEXITED(k.status) || WEXITSTATUS(k.status) != 0)
          why += format("%srank %d %s", why.empty() ? "" : "; ", k.rank,
                        k.reaped ? exitText(k.status).c_str() : "did not exit after it finished");
      if (why.empty() && judged != want) why = format("the world finished after %zu of its %zu cases", judged, want);
      break;
    } else {
      why = format("protocol: message kind %u", kind);
      break;
    }
  }
  if (!why.empty()) {
    ++tally->failed;
    const std::string at = next < cases.size() ? describe(cases[next], P) : std::string("the end");
    printf("FAIL  P=%d %s world, at %s: %s\n", P, kWorldNames[w], at.c_str(), why.c_str());
  }
  killWorld(kids);
  printf("# %s world: %zu of %zu cases judged in %.1f s\n", kWorldNames[w], judged, want, secondsSince(t0));
}

int usage(const char* argv0) {
  fprintf(stderr, "usage: %s P [--round-timeout SECONDS] [--deadline SECONDS]   (P: ranks, 2..%d, all on GPU 0)\n",
          argv0, taco::kMaxPeerRanks);
  return 2;
}

// The last resort against a hang of the parent itself (its own loopback world): the children
// die with it (PR_SET_PDEATHSIG).
void onDeadline(int) {
  static const char msg[] = "FAIL  ipc_world: the run passed its --deadline\n";
  (void)!write(STDOUT_FILENO, msg, sizeof(msg) - 1);
  _exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage(argv[0]);
  char* end = nullptr;
  const long P = strtol(argv[1], &end, 10);
  if (*end != '\0' || P < 2 || P > taco::kMaxPeerRanks) return usage(argv[0]);
  double roundTimeout = 240, deadline = 870;
  for (int i = 2; i < argc; ++i) {
    double* v = strcmp(argv[i], "--round-timeout") == 0 ? &roundTimeout
                : strcmp(argv[i], "--deadline") == 0    ? &deadline
                                                        : nullptr;
    if (v == nullptr || i + 1 == argc) return usage(argv[0]);
    *v = strtod(argv[++i], &end);
    if (*end != '\0' || !(*v > 0)) return usage(argv[0]);
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGALRM, onDeadline);
  alarm((unsigned)deadline);
  const std::vector<Case> cases = buildCases((int)P);
  const auto t0 = Clock::now();
  char tuneDir[] = "/tmp/ipc_world_tune_XXXXXX";
  if (mkdtemp(tuneDir) == nullptr) {
    perror("ipc_world: mkdtemp");
    return 1;
  }
  gTuneDir = tuneDir;

  // Fork every child before this process makes any CUDA call.
  std::vector<std::vector<Kid>> worlds(kNumWorlds);
  std::vector<int> parentEnds;
  fflush(stdout);
  fflush(stderr);
  const pid_t parent = getpid();
  for (int w = 0; w < kNumWorlds; ++w)
    for (int r = 0; r < P; ++r) {
      int sv[2];
      if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        perror("ipc_world: socketpair");
        return 1;
      }
      const pid_t pid = fork();
      if (pid < 0) {
        perror("ipc_world: fork");
        return 1;
      }
      if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);  // a killed parent takes its children along
        if (getppid() != parent) _exit(1);
        for (int fd : parentEnds) close(fd);
        close(sv[0]);
        childMain((World)w, r, (int)P, sv[1], cases);
      }
      close(sv[1]);
      fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
      parentEnds.push_back(sv[0]);
      Kid k;
      k.pid = pid;
      k.fd = sv[0];
      k.rank = r;
      worlds[w].push_back(k);
    }

  printf("# ipc_world P=%ld: %zu cases, 3 worlds of %ld processes on GPU 0 (cuda-ipc peer memory)\n", P,
         cases.size(), P);
  Tally tally;
  std::vector<Expected> expected;
  std::string why;
  const auto tOracle = Clock::now();
  if (!computeExpected((int)P, cases, expected, &why)) {
    ++tally.failed;
    printf("FAIL  P=%ld the loopback world (the oracle): %s\n", P, why.c_str());
    for (auto& kids : worlds) killWorld(kids);
  } else {
    printf("# expected outputs from a loopback world in %.1f s\n", secondsSince(tOracle));
    for (int w = 0; w < kNumWorlds; ++w) runWorld((World)w, (int)P, worlds[w], cases, expected, roundTimeout, &tally);
  }
  for (int fd : parentEnds) close(fd);
  for (const char* leaf : {"/tune.json", "/tune.json.lock"}) unlink((gTuneDir + leaf).c_str());
  rmdir(gTuneDir.c_str());
  printf("ipc_world P=%ld: %d passed, %d failed (%.1f s)\n", P, tally.passed, tally.failed, secondsSince(t0));
  return tally.failed == 0 && tally.passed > 0 ? 0 : 1;
}
