// taco_perf command line: the options, and a parser that touches no GPU (so
// that argument errors are reported, with exit code 2, on any machine).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "taco.h"

namespace perf {

enum Coll { kAllReduce = 0, kReduceScatter = 1, kAllGather = 2, kAlltoAll = 3, kNumColls = 4 };
const char* collName(Coll c);
// The name of a tacoAlgo_t as --algo spells it (tacoAlgoName), "?" for anything else.
const char* algoName(int algo);
// Whether a file may be written at `path` (an existing file that is not a directory, or a new one
// in an existing directory), without creating it; errno says why not (0: a directory).
bool canWriteFile(const char* path);

struct Options {
  size_t minBytes = 32u << 20;      // -b
  size_t maxBytes = 32u << 20;      // -e
  int stepFactor = 2;               // -f
  size_t stepBytes = 0;             // -i (additive step; overrides -f when > 0)
  int iters = 20;                   // -n
  int warmup = 5;                   // -w
  int check = 1;                    // -c
  int graphIters = 0;               // -G
  std::string jsonPath;             // -J
  std::vector<Coll> colls{kAllReduce};                 // -o
  std::vector<tacoDataType_t> dtypes{tacoBfloat16};    // -d
  std::vector<std::string> codecs{"taco"};             // -C
  int loopback = 0;                 // --loopback N (0: NCCL, one process per GPU)
  size_t checkMaxBytes = 64u << 20; // --check-max
  long long fallbackBytes = -1;     // --fallback (-1: the library's default / TACO_FALLBACK_BYTES)
  long long chunkBytes = -1;        // --chunk
  int pipelineDepth = -1;           // --depth
  int algo = -1;                    // --algo (tacoAlgo_t; -1: the library's default / TACO_ALGO)
  int diy = 1;                      // --diy 0|1
  uint64_t seed = 0x7ac0;           // --seed
  std::string idFile;               // --id-file (NCCL bootstrap without MPI)
  bool help = false;
};

const char* dtypeName(tacoDataType_t t);
size_t dtypeBytes(tacoDataType_t t);  // bytes per element

// Parses argv. Returns 0 on success, 2 after printing a message to stderr on a
// usage error; sets o->help for -h/--help (the caller prints usage()).
int parseArgs(int argc, char** argv, Options* o);
void printUsage(FILE* f);

// "1K" -> 1024, "32M", "1G", "4096", "2MB", "2MiB". False on anything else.
bool parseBytes(const char* s, size_t* out);

}  // namespace perf
