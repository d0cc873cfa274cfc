// The AllReduce table cache: one JSON file of tables, each under the fingerprint of the
// machine and configuration it was measured on (docs/tuning.md, "The cache"). Host code only,
// tested by tests/host/test_tune_cache.cc.
//
//   {"format": "libtaco-tune-1",
//    "tables": [{"key": "gpu=NVIDIA H200;sms=132;ranks=8;...", "bytes": [4096, ...],
//                "algos": ["plain", "oneshot-raw", "oneshot", "fused", "fused-large", "staged"],
//                "us": [[12.5, 8.25, null, ...], ...], "demoted": ["oneshot"], "max_bytes": 268435456,
//                "notes": "...", "choice": ["oneshot-raw", ...], "hash": "89ab..."}, ...]}
//
// Times are microseconds (null: none); the hash is tuneHash() of what the entry holds, so an
// entry edited or cut short is found out. Writers replace the file whole (a temporary file,
// then rename), so a reader never sees half a file, whatever other jobs write at once. Only a
// regular file of this format (or none) is ever replaced: anything else at the path is left as
// it is and nothing is written.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "coll/tune_table.h"

namespace taco {

// What a table's numbers depend on. Two communicators with equal fingerprints may share a table.
struct TuneFingerprint {
  std::string gpu;       // the device's name
  int sms = 0;           // its multiprocessors
  int ranks = 0;
  int ranksPerHost = 0;  // the most ranks on one host (the same on every rank)
  std::string route;     // peer memory: "loopback", "nccl-symmetric", "cuda-ipc" or "none"
  int nccl = 0;          // the loaded NCCL's version code (0: no NCCL, loopback)
  int taco = 0;          // TACO_VERSION_CODE
  std::string build;     // TACO_BUILD_ID: a hash of the library's sources (the same version rebuilt differs)
  int driver = 0;        // the CUDA driver's version (cudaDriverGetVersion)
  std::string codec;     // the codec spec, "name:block=N" (or "name" without blocks)
  std::string dtype;     // "float32", "float16", "bfloat16"
  size_t chunkBytes = 0;
  int depth = 0;         // pipeline depth (the staged path's streams)
  int early = 0;         // how the fused phases launch: a PeerLaunchMode (TACO_PEER_EARLY_LAUNCH, peerCommLaunchMode)
  int claims = 0;        // 1: the fused two-shot claims its tiles (TACO_PEER_CLAIM_MIN_RANKS, peerClaimsTiles)
};

// "gpu=...;sms=...;ranks=...;per_host=...;route=...;nccl=...;taco=...;build=...;driver=...;codec=...;dtype=...;
// chunk=...;depth=...;early=...;claims=..."
std::string tuneKey(const TuneFingerprint& f);

// The most a cache file may hold; a larger file is refused unread.
constexpr size_t kTuneCacheMaxBytes = (size_t)16 << 20;

// The file: TACO_TUNE_FILE when set, else $XDG_CACHE_HOME/taco/tune.json, else
// $HOME/.cache/taco/tune.json ("" when none of them is set).
std::string tuneCachePath();

// One table as a JSON object (the entry format above). Kept outside the hash, for people and
// tools that read the file: `notes` (free text: where the demotions came from) and `choice`
// (when given: the candidate each bucket picks on the communicator that wrote it).
std::string tuneTableJson(const TuneTable& t, const std::string& notes, const std::vector<int>* choice = nullptr);

// Reads the entry for `key` from the file at `path`. Returns 1 with *out set when found and
// intact (the first intact one, when the key appears twice); 0 when the file is absent or has no
// entry for the key (`why` says which); -1 when the file is not a regular file of at most
// kTuneCacheMaxBytes, cannot be read or parsed, or its entries for the key are corrupted or hold
// other algorithm columns than this libtaco's (`why` says what). Throws nothing.
int tuneCacheFind(const std::string& path, const std::string& key, TuneTable* out, std::string* why);

// Puts `t` into the file at `path` in place of any entry with its key (the others kept), creating
// the directory if needed: written to a temporary file beside it, then renamed over it. A
// symbolic link is followed and its target replaced. False with `why`, writing nothing, when `t`
// must not be cached (tuneTableUncacheable), or the path holds something other than a regular
// file of this format: a directory, a device, a FIFO, a file that cannot be read (its tables
// would be lost), another format or another libtaco version's cache. The one exception: a file
// that starts as this writer's files do but does not parse (a damaged cache) is renamed to
// `<file>.bad`, with a warning, and replaced. Temporary files a killed writer left behind, an
// hour old, are removed. Throws nothing.
bool tuneCacheStore(const std::string& path, const TuneTable& t, const std::string& notes, std::string* why,
                    const std::vector<int>* choice = nullptr);

// Logs a cache problem: at WARN the first time this process meets `text`, at INFO after (the same
// file is read for every dtype of every communicator).
void tuneCacheWarn(const std::string& text);

}  // namespace taco
