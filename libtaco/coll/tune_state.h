// What a communicator knows of its AllReduce tables (docs/tuning.md): the table in use per
// dtype, where it came from, and the fingerprint its tables are keyed by. Kept beside the
// communicator, in a registry keyed by it, and shared by the ranks of a loopback world, which
// are measured together. The measuring itself is coll/tune.cc.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "coll/tune_cache.h"
#include "coll/tune_table.h"
#include "taco.h"

struct tacoComm;

namespace taco {

struct TuneInstalled {
  std::shared_ptr<const TuneTable> table;  // null: none (the model decides)
  std::string source;                      // "measured" or "cache"
  std::string notes;                       // why candidates were demoted, as this process saw it
  double seconds = 0;                      // how long the measuring took ("measured")
};

// At creation, after peer memory: registers the communicators (a loopback world's ranks in rank
// order, or one NCCL rank), works out their fingerprint and, with TACO_TUNE=auto, takes the
// cached tables that every rank found with the same hash. Collective over an NCCL
// communicator of 2 or more ranks (whatever TACO_TUNE says: the ranks' settings may differ
// when the consistency check is off). A cache that cannot be used is a warning, not an error.
tacoResult_t tuneAttach(tacoComm** comms, int n, bool loopback);

// Whether this process writes `c`'s measured tables to the cache: a loopback world's process, or
// an NCCL communicator's lowest rank on each host (TuneState::storesCache).
bool tuneStoresCache(const tacoComm* c);

// At destroy: forgets the communicator (a loopback world it belonged to is measured no more).
void tuneDetach(tacoComm* c);

// The table `c` uses for `dtype`, or null.
std::shared_ptr<const TuneTable> tuneTableOf(const tacoComm* c, tacoDataType_t dtype);
TuneInstalled tuneInstalledOf(const tacoComm* c, tacoDataType_t dtype);

// The communicators measured together with `c`, in rank order: its loopback world, or c
// alone. Empty when a rank of the world was destroyed (or c is unknown).
std::vector<tacoComm*> tuneWorldOf(const tacoComm* c);

// The cache key of `c`'s tables of `dtype` ("" for an unknown communicator).
std::string tuneKeyOf(const tacoComm* c, tacoDataType_t dtype);

// Installs `t` for `dtype` on `c` and every communicator of its world.
void tuneInstall(const tacoComm* c, tacoDataType_t dtype, TuneInstalled t);

// True the first time it is asked for `dtype` on `c`'s world: the call that may measure.
bool tuneClaimFirstUse(const tacoComm* c, tacoDataType_t dtype);
// True until tuneClaimFirstUse has been (a look without claiming: the fast path of every call).
bool tuneFirstUsePending(const tacoComm* c, tacoDataType_t dtype);

// Keeps `text` with `c` until the next call for `dtype` or the communicator's destruction, and
// returns it (the string tacoCommTuneTable hands out).
const char* tuneKeepText(const tacoComm* c, tacoDataType_t dtype, std::string text);

}  // namespace taco
