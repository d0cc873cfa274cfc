// The AllReduce by a given algorithm, for callers that choose the algorithm themselves (the
// tuner, coll/tune.cc); tacoAllReduce goes through allReduce() (coll/coll.h), which chooses.
#pragma once
#include "coll/allreduce_select.h"
#include "coll/coll.h"
#include "coll/tune_table.h"

namespace taco {

// What the selection sees of a call of `count` elements of `dtype` on `c`.
AlgoInputs algoInputs(const tacoComm* c, size_t count, tacoDataType_t dtype);

// The model's choice for a call (selectAllReduceAlgo), ignoring config algo and any tuned table.
int modelAllReduceAlgo(const tacoComm* c, size_t count, tacoDataType_t dtype);

// The candidate (coll/tune_table.h) the automatic choice takes from a tuned table's row `r` for a
// call of `count` elements of `dtype` on `c`: tunedCandidate against the model's choice, among the
// candidates algoAutoExcluded leaves in (so never a one-shot where the peer kernels are separate
// launches, whatever an older table holds). -1 when the model's algorithm has no candidate.
int tunedAutoCandidate(const tacoComm* c, const TuneRow& r, size_t count, tacoDataType_t dtype);

// Builds and submits the AllReduce by `algo` (a tacoAlgo_t other than auto that can run on `c`:
// algoUnavailable says). Like allReduce: queued in an open group, else run now.
tacoResult_t allReduceRun(tacoComm* c, const CollArgs& a, int algo);

}  // namespace taco
