#include "coll/tune_state.h"

#include "taco_build_id.h"  // generated (cmake/build_id.cmake): TACO_BUILD_ID

#include <cuda_runtime_api.h>

#include <cstring>
#include <mutex>
#include <unordered_map>

#include "coll/allreduce_peer.h"
#include "coll/allreduce_run.h"
#include "coll/peer_plan.h"
#include "coll/peer_resize.h"
#include "codec/codec.h"
#include "codec/launch.h"
#include "core/check.h"
#include "core/comm.h"
#include "core/dtype.h"
#include "core/params.h"
#include "transport/nccl_symmetric.h"
#include "transport/peer_memory.h"
#include "transport/transport.h"

namespace taco {
namespace {

struct TuneState {
  std::vector<tacoComm*> comms;  // the world, in rank order; an entry is null once destroyed
  TuneFingerprint base;          // every field but the dtype
  // This process writes the world's measured tables to the cache: a loopback world (one process),
  // or the lowest rank of its host, so that every host's cache gets them (a table is used only
  // where every rank's cache has it) and ranks of one host do not all write one file.
  bool storesCache = false;
  std::mutex mu;
  TuneInstalled installed[tacoNumDataTypes];
  bool claimed[tacoNumDataTypes] = {};
  std::vector<std::string> text[tacoNumDataTypes];  // per rank of the world: tacoCommTuneTable's string
};

std::mutex gMu;
std::unordered_map<const tacoComm*, std::shared_ptr<TuneState>>& registry() {
  static auto* r = new std::unordered_map<const tacoComm*, std::shared_ptr<TuneState>>();  // never destroyed:
  return *r;  // communicators may outlive static destruction order
}

std::shared_ptr<TuneState> stateOf(const tacoComm* c) {
  std::lock_guard<std::mutex> lock(gMu);
  auto it = registry().find(c);
  return it == registry().end() ? nullptr : it->second;
}

int rankIn(const TuneState& s, const tacoComm* c) {
  for (size_t i = 0; i < s.comms.size(); ++i)
    if (s.comms[i] == c) return (int)i;
  return -1;
}

std::string codecSpecOf(tacoCodec_t codec) {
  const CodecDesc* d = codecById(codec.id);
  if (d == nullptr) return "?";
  return d->blocked ? std::string(d->name) + ":block=" + std::to_string(codec.blockSize) : std::string(d->name);
}

// The device's name and multiprocessors, asked once per device (cudaGetDeviceProperties is slow,
// and communicators are created often, in tests thousands of times).
void deviceIdentity(int device, std::string* name, int* sms) {
  static std::mutex mu;
  static std::unordered_map<int, std::pair<std::string, int>> known;
  std::lock_guard<std::mutex> lock(mu);
  auto it = known.find(device);
  if (it == known.end()) {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, device) == cudaSuccess) {
      it = known.emplace(device, std::make_pair(std::string(prop.name), prop.multiProcessorCount)).first;
    } else {
      (void)cudaGetLastError();
      *name = "?";
      *sms = 0;
      return;
    }
  }
  *name = it->second.first;
  *sms = it->second.second;
}

// Every field but the dtype and what depends on it (claims); collective (ranks per host) for an NCCL
// communicator. *storesCache: TuneState::storesCache.
tacoResult_t fingerprint(tacoComm* c, int n, bool loopback, TuneFingerprint* f, bool* storesCache) {
  deviceIdentity(c->device, &f->gpu, &f->sms);
  f->ranks = c->nranks;
  f->ranksPerHost = n;
  *storesCache = true;
  if (!loopback) {  // the same key on every rank, also where hosts hold different rank counts
    bool oneHost = false;
    int here = 0;
    TACO_CHECK(peerHostLayout(c->transport, &here, &oneHost, storesCache, &f->ranksPerHost));
  }
  f->route = c->peer != nullptr ? c->peer->route : "none";
  const NcclSymmetricApi* api = nullptr;
  if (c->transport->ncclComm() != nullptr && ncclSymmetricApi(&api) == tacoSuccess) f->nccl = api->version;
  f->taco = TACO_VERSION_CODE;
  f->build = TACO_BUILD_ID;
  if (cudaDriverGetVersion(&f->driver) != cudaSuccess) (void)cudaGetLastError(), f->driver = 0;
  f->codec = codecSpecOf(c->codec);
  f->chunkBytes = c->config.chunkBytes;
  f->depth = c->depth;
  f->early = peerCommLaunchMode(c, n);
  return tacoSuccess;
}

}  // namespace

tacoResult_t tuneAttach(tacoComm** comms, int n, bool loopback) {
  auto s = std::make_shared<TuneState>();
  s->comms.assign(comms, comms + n);
  tacoComm* c0 = comms[0];
  const bool collective = !loopback && c0->nranks > 1;
  TACO_CHECK(fingerprint(c0, n, loopback, &s->base, &s->storesCache));
  {
    std::lock_guard<std::mutex> lock(gMu);
    for (int i = 0; i < n; ++i) registry()[comms[i]] = s;
  }
  if (c0->nranks < 2) return tacoSuccess;  // nothing to choose between ranks
  // The cached tables: every rank reads the file; a table is used only where every rank found
  // one with the same hash (a rank whose file is damaged, or another GPU, makes none used).
  struct Found {
    uint64_t hash[tacoNumDataTypes];
    int32_t has[tacoNumDataTypes];
  } mine{};
  TuneTable tables[tacoNumDataTypes];
  const std::string path = tuneCachePath();
  if (envParams().tune == kTuneAuto && !path.empty()) {
    for (int d = 0; d < tacoNumDataTypes; ++d) {
      const std::string key = tuneKeyOf(c0, (tacoDataType_t)d);
      std::string why;
      const int got = tuneCacheFind(path, key, &tables[d], &why);
      if (got < 0) tuneCacheWarn("tune: the cached AllReduce table is not used: " + why);  // once per file and fault
      else if (got == 0) TACO_INFO("tune: no cached AllReduce table for %s: %s", dtypeName((tacoDataType_t)d), why.c_str());
      mine.has[d] = got == 1;
      mine.hash[d] = got == 1 ? tables[d].hash : 0;
    }
  }
  std::vector<Found> all(collective ? c0->nranks : 1, mine);
  if (collective) TACO_CHECK(c0->transport->hostAllGather(&mine, all.data(), sizeof(Found)));
  for (int d = 0; d < tacoNumDataTypes; ++d) {
    int agree = mine.has[d];
    for (const Found& f : all) agree &= f.has[d] && f.hash[d] == mine.hash[d];
    if (mine.has[d] && !agree)
      TACO_WARN("tune: the cached AllReduce table for %s is not used: the ranks' caches differ (another file, "
                "machine or version on some rank)", dtypeName((tacoDataType_t)d));
    if (!agree) continue;
    TuneInstalled t;
    t.table = std::make_shared<const TuneTable>(std::move(tables[d]));
    t.source = "cache";
    s->installed[d] = std::move(t);
    TACO_INFO("rank %d/%d: the cached AllReduce table for %s (%s)", c0->rank, c0->nranks,
              dtypeName((tacoDataType_t)d), path.c_str());
  }
  // A cached table that takes the fused two-shot with the larger scratch at some size: that scratch
  // now (creating it is collective, as creation is), so those sizes run as they were measured. The
  // tables are agreed, so every rank decides alike; a route that refuses keeps the scratch it has.
  bool wantLarge = false;
  for (int d = 0; d < tacoNumDataTypes; ++d) {
    const TuneTable* t = s->installed[d].table.get();
    for (size_t b = 0; t != nullptr && b < t->bytes.size(); ++b)
      wantLarge |= tunedAutoCandidate(c0, t->us[b], t->bytes[b] / dtypeBytes((tacoDataType_t)d), (tacoDataType_t)d) ==
                   kCandFusedLarge;
  }
  const size_t largeChunk = kLargeChunkFactor * c0->config.chunkBytes;
  if (wantLarge && c0->peer != nullptr && peerScratchOf(c0) < peerScratchBytes(largeChunk, c0->nranks, c0->codec)) {
    std::vector<PeerMemory*> pm;
    TACO_CHECK(peerMemoryCreateSized(s->comms, largeChunk, &pm));
    for (size_t i = 0; i < pm.size() && pm[0] != nullptr; ++i) peerMemoryFree(peerMemorySwap(s->comms[i], pm[i]));
    if (pm[0] != nullptr)
      TACO_INFO("rank %d/%d: peer memory of %zu bytes (chunk %zu), as the cached table takes the fused two-shot "
                "with it", c0->rank, c0->nranks, peerScratchOf(c0), largeChunk);
  }
  return tacoSuccess;
}

bool tuneStoresCache(const tacoComm* c) {
  const std::shared_ptr<TuneState> s = stateOf(c);
  return s != nullptr && s->storesCache;
}

void tuneDetach(tacoComm* c) {
  std::shared_ptr<TuneState> s;
  {
    std::lock_guard<std::mutex> lock(gMu);
    auto it = registry().find(c);
    if (it == registry().end()) return;
    s = it->second;
    registry().erase(it);
  }
  std::lock_guard<std::mutex> lock(s->mu);
  for (tacoComm*& w : s->comms)
    if (w == c) w = nullptr;
}

std::shared_ptr<const TuneTable> tuneTableOf(const tacoComm* c, tacoDataType_t dtype) {
  if ((int)dtype < 0 || (int)dtype >= tacoNumDataTypes) return nullptr;
  const std::shared_ptr<TuneState> s = stateOf(c);
  if (s == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(s->mu);
  return s->installed[dtype].table;
}

TuneInstalled tuneInstalledOf(const tacoComm* c, tacoDataType_t dtype) {
  const std::shared_ptr<TuneState> s = stateOf(c);
  if (s == nullptr || (int)dtype < 0 || (int)dtype >= tacoNumDataTypes) return TuneInstalled();
  std::lock_guard<std::mutex> lock(s->mu);
  return s->installed[dtype];
}

std::vector<tacoComm*> tuneWorldOf(const tacoComm* c) {
  const std::shared_ptr<TuneState> s = stateOf(c);
  if (s == nullptr) return {};
  std::lock_guard<std::mutex> lock(s->mu);
  for (tacoComm* w : s->comms)
    if (w == nullptr) return {};
  return s->comms;
}

std::string tuneKeyOf(const tacoComm* c, tacoDataType_t dtype) {
  const std::shared_ptr<TuneState> s = stateOf(c);
  if (s == nullptr) return "";
  TuneFingerprint f = s->base;
  f.dtype = dtypeName(dtype);
  f.claims = c->peer != nullptr && peerClaimsTiles(makeArgs(c->codec, 0, dtype), tacoAlgoFused, c->nranks, dtype);
  return tuneKey(f);
}

void tuneInstall(const tacoComm* c, tacoDataType_t dtype, TuneInstalled t) {
  const std::shared_ptr<TuneState> s = stateOf(c);
  if (s == nullptr) return;
  std::lock_guard<std::mutex> lock(s->mu);
  s->installed[dtype] = std::move(t);
}

bool tuneClaimFirstUse(const tacoComm* c, tacoDataType_t dtype) {
  const std::shared_ptr<TuneState> s = stateOf(c);
  if (s == nullptr) return false;
  std::lock_guard<std::mutex> lock(s->mu);
  if (s->claimed[dtype]) return false;
  s->claimed[dtype] = true;
  return true;
}

bool tuneFirstUsePending(const tacoComm* c, tacoDataType_t dtype) {
  const std::shared_ptr<TuneState> s = stateOf(c);
  if (s == nullptr) return false;
  std::lock_guard<std::mutex> lock(s->mu);
  return !s->claimed[dtype];
}

const char* tuneKeepText(const tacoComm* c, tacoDataType_t dtype, std::string text) {
  const std::shared_ptr<TuneState> s = stateOf(c);
  if (s == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(s->mu);
  const int r = rankIn(*s, c);
  if (r < 0) return nullptr;
  std::vector<std::string>& texts = s->text[dtype];
  if (texts.size() < s->comms.size()) texts.resize(s->comms.size());
  texts[(size_t)r] = std::move(text);
  return texts[(size_t)r].c_str();
}

}  // namespace taco
