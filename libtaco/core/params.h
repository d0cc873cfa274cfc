// Every TACO_* environment variable, read in one place (params.cc) and cached.
// docs/tuning.md documents each; `python -m taco info` prints the table.
#pragma once
#include <cstddef>
#include <string>

namespace taco {

struct EnvParams {
  const char* codec;      // TACO_CODEC            default codec spec ("fp8-block")
  size_t chunkBytes;      // TACO_CHUNK_BYTES      pipeline chunk, uncompressed bytes
  size_t fallbackBytes;   // TACO_FALLBACK_BYTES   below this, plain NCCL
  int pipelineDepth;      // TACO_PIPELINE_DEPTH   streams in the chunk pipeline
  int checkConsistency;   // TACO_CHECK_CONSISTENCY ranks compare version/codec at creation
  int checkPointers;      // TACO_CHECK_POINTERS   validate device pointers (cudaPointerGetAttributes)
  const char* ncclLibrary;// TACO_NCCL_LIBRARY     libnccl to dlopen when none is loaded
  const char* debug;      // TACO_DEBUG            WARN | INFO | TRACE
  int algo;               // TACO_ALGO             tacoAlgo_t forced for AllReduce (tacoAlgoAuto: pick)
  double waitTimeoutS;    // TACO_WAIT_TIMEOUT_S   a peer-memory kernel gives up waiting after this
  int peerMemory;         // TACO_PEER_MEMORY      a PeerMemoryMode
  int peerEarlyLaunch;    // TACO_PEER_EARLY_LAUNCH a PeerLaunchMode: 2 (default) the fused two-shot's phase kernels
                          //                       launch early (sm_90), the chunks' phases interleaved; 1 early; 0 after
  int peerClaimMinRanks;  // TACO_PEER_CLAIM_MIN_RANKS the fused two-shot claims its tiles from this many ranks on (0: never)
  int peerTimeline;       // TACO_PEER_TIMELINE    0 off; 1 print the peer kernels' last launch at destroy;
                          //                       N > 1 also after every N-th launch (coll/peer_timeline_buffer.h)
  int peerTimelineCtas;   // TACO_PEER_TIMELINE_CTAS 1: the timeline also prints every CTA's row
  int tune;               // TACO_TUNE             a TuneMode: when the AllReduce table is measured (coll/tune.h)
  const char* tuneFile;   // TACO_TUNE_FILE        the table cache; "" for $XDG_CACHE_HOME/taco/tune.json
  size_t tuneMaxBytes;    // TACO_TUNE_MAX_BYTES   the largest size the tuner measures (also capped by free memory)
};

// TACO_TUNE: when a communicator's AllReduce table is measured (docs/tuning.md).
enum TuneMode {
  kTuneOff = 0,    // "off": the model only; no cache read, no measuring unless tacoCommTune is called
  kTuneAuto = 1,   // "auto" (default): the cached table, else measure at the first eager AllReduce of a dtype
  kTuneForce = 2,  // "force": measure at the first eager AllReduce of a dtype even where the cache has a table
};

// TACO_PEER_MEMORY: which peer-memory routes a communicator tries (coll/allreduce_peer.cc).
enum PeerMemoryMode {
  kPeerMemoryOff = 0,       // "0": none
  kPeerMemoryOn = 1,        // "1" (default): loopback worlds; NCCL ranks on one host: nccl-symmetric, else cuda-ipc
  kPeerMemoryLoopback = 2,  // "loopback": loopback worlds only
  kPeerMemoryNccl = 3,      // "nccl": loopback worlds; NCCL: nccl-symmetric only
  kPeerMemoryIpc = 4,       // "ipc": loopback worlds; NCCL: cuda-ipc only
};

// TACO_FAULT_SKIP_RANK, read when peer memory is created (not cached): the rank whose
// peer-kernel CTAs return at once, so that its peers' waits time out or see an abort.
// A testing knob for the failure paths; -1 when unset.
int faultSkipRank();

// TACO_FAULT_PEER_LAUNCH, read when peer memory is created (not cached): the index of the
// communicator's peer-kernel launch that fails as if the driver refused it (0: the first), so
// that a call launched in part can be tested; -1 when unset.
int faultPeerLaunch();

// TACO_TUNE_FAULT, read at each tuning (not cached): the tacoAlgo_t whose output the tuner's
// check sees corrupted on the lowest rank it drives, so that the demotion can be tested; -1
// when unset.
int tuneFaultAlgo();

// The AllReduce table cache when TACO_TUNE_FILE is unset: $XDG_CACHE_HOME/taco/tune.json,
// else $HOME/.cache/taco/tune.json; "" when neither variable is set.
std::string defaultTuneFile();

// The tacoAlgo_t named `s` ("auto", "plain", "staged", "fused", "oneshot", "oneshot-raw"),
// or -1; and the name of an algorithm: nullptr (algoNameOrNull, tacoAlgoName) or "?" (algoName,
// for messages) for a value that is not a tacoAlgo_t.
int algoFromName(const char* s);
const char* algoNameOrNull(int algo);
const char* algoName(int algo);

// The parsed environment, read on first use. Malformed values are reported at
// WARN and replaced by the default.
const EnvParams& envParams();

// TACO_DEBUG alone, read without logging (the logger depends on it).
const char* debugParam();

// One row per variable: the single source of its name, default and meaning
// (tacoGetParamInfo, `taco info`), and of how its text parses into EnvParams.
struct EnvParam {
  const char* name;
  const char* defaultValue;  // as text, parsed like a value from the environment
  const char* meaning;
  const char* expected;      // what a valid value is, for the warning about a malformed one
  bool (*parse)(const char* text, EnvParams* into);  // false: `text` is malformed
};
const EnvParam* envParamTable(int* count);
// The environment's value of envParamTable()[index], or nullptr when unset or empty.
const char* paramValue(int index);

}  // namespace taco
