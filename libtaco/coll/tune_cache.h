// The AllReduce table cache: one JSON file of tables, each under the fingerprint of the
// machine and configuration it was measured on (docs/tuning.md, "The cache"). Host code only,
// tested by tests/host/test_tune_cache.cc.
//
//   {"format": "libtaco-tune-1",
//    "tables": [{"key": "gpu=NVIDIA H200;sms=132;ranks=8;...", "bytes": [4096, ...],
//                "algos": ["plain", "oneshot-raw", "oneshot", "fused", "fused-large", "staged"],
//                "us": [[12.5, 8.25, null, ...], ...], "demoted": ["oneshot"],
//                "notes": "...", "choice": ["oneshot-raw", ...], "hash": "89ab..."}, ...]}
//
// Times are microseconds (null: none); the hash is tuneHash() of what the entry holds, so an
// entry edited or cut short is found out. Writers replace the file whole (a temporary file,
// then rename), so a reader never sees half a file, whatever other jobs write at once.
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
  int ranksPerHost = 0;  // ranks on this rank's host
  std::string route;     // peer memory: "loopback", "nccl-symmetric", "cuda-ipc" or "none"
  int nccl = 0;          // the loaded NCCL's version code (0: no NCCL, loopback)
  int taco = 0;          // TACO_VERSION_CODE
  std::string codec;     // the codec spec, "name:block=N" (or "name" without blocks)
  std::string dtype;     // "float32", "float16", "bfloat16"
  size_t chunkBytes = 0;
  int depth = 0;         // pipeline depth (the staged path's streams)
  int early = 0;         // 1: the fused phases launch early (TACO_PEER_EARLY_LAUNCH, peerCommLaunchesEarly)
  int claims = 0;        // 1: the fused two-shot claims its tiles (TACO_PEER_CLAIM_MIN_RANKS, peerClaimsTiles)
};

// "gpu=...;sms=...;ranks=...;per_host=...;route=...;nccl=...;taco=...;codec=...;dtype=...;chunk=...;depth=...;early=...;
// claims=..."
std::string tuneKey(const TuneFingerprint& f);

// The file: TACO_TUNE_FILE when set, else $XDG_CACHE_HOME/taco/tune.json, else
// $HOME/.cache/taco/tune.json ("" when none of them is set).
std::string tuneCachePath();

// One table as a JSON object (the entry format above). Kept outside the hash, for people and
// tools that read the file: `notes` (free text: where the demotions came from) and `choice`
// (when given: the candidate each bucket picks on the communicator that wrote it).
std::string tuneTableJson(const TuneTable& t, const std::string& notes, const std::vector<int>* choice = nullptr);

// Reads the entry for `key` from the file at `path`. Returns 1 with *out set when found and
// intact; 0 when the file is absent or has no entry for the key (`why` says which); -1 when the
// file cannot be read or parsed, or the entry is corrupted (`why` says what).
int tuneCacheFind(const std::string& path, const std::string& key, TuneTable* out, std::string* why);

// Puts `t` into the file at `path` in place of any entry with its key (the others kept; a file
// that does not parse is replaced), creating the directory if needed: written to a temporary
// file beside it, then renamed over it. False with `why`.
bool tuneCacheStore(const std::string& path, const TuneTable& t, const std::string& notes, std::string* why,
                    const std::vector<int>* choice = nullptr);

}  // namespace taco
