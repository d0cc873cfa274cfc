// The tuner: measures a communicator's AllReduce table on its own GPUs (docs/tuning.md,
// "The AllReduce table"). Every algorithm the communicator can run is first checked bit for
// bit against its oracle on this machine, then timed at power-of-two sizes; the ranks combine
// their timings (the max) through the transport's plain AllReduce, so every rank derives the
// same table, and compare its hash before using it. The table (coll/tune_table.h) goes to the
// communicator (coll/tune_state.h) and, from the lowest rank of each host, to the cache
// (coll/tune_cache.h).
#pragma once
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "taco.h"

struct tacoComm;

namespace taco {

// Measures, agrees and installs the AllReduce table of `dtype` for `world`: every rank of a
// loopback world in rank order, or one NCCL rank (collective over its communicator: every rank
// calls it). Runs on `stream`, which it synchronises; returns when done. Safe inside the
// caller's open group (it runs outside it). `op` names the caller in messages. A world of one
// rank, or that can run fewer than two algorithms, has nothing to measure: tacoSuccess and no
// table. A candidate that fails its check (a mismatch, an error, a peer-memory timeout) is
// demoted with a warning; a timeout also releases the communicator's peer memory, whose epochs
// can no longer be trusted.
tacoResult_t tuneMeasure(const std::vector<tacoComm*>& world, tacoDataType_t dtype, cudaStream_t stream,
                         const char* op);

// TACO_TUNE=auto|force, at each eager AllReduce: the first one of `dtype` on c's world measures,
// unless a table is in use (auto: any; force: one measured in this process, by tacoCommTune) or
// `stream` is capturing a CUDA graph (then the table in use, else the model, and the next eager
// call measures). Not with a forced algorithm (config algo).
// A failure to measure is a warning: the model decides.
tacoResult_t tuneOnFirstUse(tacoComm* c, tacoDataType_t dtype, cudaStream_t stream);

// tacoCommTune: measures for one communicator (an NCCL rank; a loopback world of one rank).
// Refused inside a group, during a graph capture, and for a loopback world of several ranks
// (tuneLoopback), naming `op`.
tacoResult_t tuneCommunicator(tacoComm* c, tacoDataType_t dtype, cudaStream_t stream, const char* op);
// tacoCommTuneLoopback: measures for the `n` communicators of one loopback world, given in rank
// order (every rank of it). Refused inside a group and during a graph capture.
tacoResult_t tuneLoopback(tacoComm* const* comms, int n, tacoDataType_t dtype, cudaStream_t stream, const char* op);

// The table `c` uses for `dtype` as JSON (tacoCommTuneTable): the cache entry's fields and
// "dtype", "source" ("measured" or "cache"), "ms" (how long measuring took), "ranks",
// "scratch_bytes" (c's peer-memory scratch per rank), "large_chunk_bytes" (the chunk of the
// fused-large column), "model" and "choice" (per bucket: the model's algorithm and the candidate
// the table picks); "" when `c` has no table.
std::string tuneReport(const tacoComm* c, tacoDataType_t dtype);

}  // namespace taco
