// Exported entry points of the AllReduce tuner (docs/tuning.md): argument checks, then one
// call into coll/tune.cc. Failures are also recorded on the communicator.
#include <vector>

#include "api/argcheck.h"
#include "coll/tune.h"
#include "coll/tune_state.h"
#include "core/check.h"
#include "core/export.h"

using namespace taco;

extern "C" {

// The tuner runs collectives on the communicators for seconds: they are held for it, as for a
// call (core/comm.h), so another thread cannot destroy or use them meanwhile.
TACO_API tacoResult_t tacoCommTune(tacoComm_t comm, tacoDataType_t datatype, tacoStream_t stream) {
  TACO_CHECK(checkComm(comm, "tacoCommTune"));
  bool taken = false;
  tacoResult_t r = commAcquire(comm, "tacoCommTune", &taken);
  if (r == tacoSuccess) r = checkDatatype(datatype, "tacoCommTune");
  if (r == tacoSuccess) r = tuneCommunicator(comm, datatype, stream, "tacoCommTune");
  if (r != tacoSuccess) commRecordError(comm);
  commRelease(comm, taken);
  return r;
}

TACO_API tacoResult_t tacoCommTuneLoopback(tacoComm_t* comms, int nranks, tacoDataType_t datatype,
                                           tacoStream_t stream) {
  TACO_CHECK(checkNotNull(comms, "tacoCommTuneLoopback", "comms"));
  TACO_ARG(nranks >= 1, "tacoCommTuneLoopback: nranks %d must be >= 1", nranks);
  for (int r = 0; r < nranks; ++r)
    if (!commIsLive(comms[r]))
      return setError(tacoInvalidArgument, "tacoCommTuneLoopback: comms[%d] is %s", r,
                      comms[r] == nullptr ? "NULL" : "not a live communicator (destroyed, or not one)");
  std::vector<bool> taken(nranks, false);
  tacoResult_t r = tacoSuccess;
  for (int q = 0; q < nranks && r == tacoSuccess; ++q) {
    bool t = false;
    r = commAcquire(comms[q], "tacoCommTuneLoopback", &t);
    taken[q] = t;
  }
  if (r == tacoSuccess) r = checkDatatype(datatype, "tacoCommTuneLoopback");
  if (r == tacoSuccess) r = tuneLoopback(comms, nranks, datatype, stream, "tacoCommTuneLoopback");
  if (r != tacoSuccess) commRecordError(comms[0]);
  for (int q = 0; q < nranks; ++q) commRelease(comms[q], taken[q]);
  return r;
}

TACO_API tacoResult_t tacoCommTuneTable(tacoComm_t comm, tacoDataType_t datatype, const char** table) {
  TACO_CHECK(checkComm(comm, "tacoCommTuneTable"));
  TACO_CHECK(checkNotNull(table, "tacoCommTuneTable", "table"));
  TACO_CHECK(checkDatatype(datatype, "tacoCommTuneTable"));
  const std::string text = tuneReport(comm, datatype);
  *table = text.empty() ? nullptr : tuneKeepText(comm, datatype, text);
  return tacoSuccess;
}

}  // extern "C"
