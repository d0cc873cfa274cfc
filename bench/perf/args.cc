// taco_perf command line parsing. No CUDA call here: codec specs are checked
// with tacoCodecFind, which is host-only.
#include "args.h"

#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

namespace perf {

const char* collName(Coll c) {
  switch (c) {
    case kAllReduce: return "allreduce";
    case kReduceScatter: return "reduce_scatter";
    case kAllGather: return "allgather";
    case kAlltoAll: return "alltoall";
    default: return "?";
  }
}

const char* dtypeName(tacoDataType_t t) {
  switch (t) {
    case tacoFloat32: return "float";
    case tacoFloat16: return "half";
    case tacoBfloat16: return "bfloat16";
    default: return "?";
  }
}

size_t dtypeBytes(tacoDataType_t t) { return t == tacoFloat32 ? 4 : 2; }

namespace {

// "auto, plain, ..., oneshot-raw", with `last` before the last name.
std::string algoList(const char* last) {
  std::string out;
  for (int a = 0; a < tacoNumAlgos; ++a)
    out += std::string(a == 0 ? "" : a + 1 == tacoNumAlgos ? last : ", ") + tacoAlgoName((tacoAlgo_t)a);
  return out;
}

}  // namespace

void printUsage(FILE* f) {
  fprintf(f,
          "usage: taco_perf [options]                 (one process per GPU, e.g. under mpirun)\n"
          "       taco_perf --loopback N [options]    (N ranks on this process's GPU)\n"
          "\n"
          "Measures libtaco's compressed collectives against the plain (uncompressed) collective\n"
          "and a do-it-yourself FP8 all-gather AllReduce, side by side, in the style of nccl-tests.\n"
          "\n"
          "  -b, --minbytes SIZE     smallest message (default 32M); SIZE takes K, M, G, T suffixes\n"
          "                          (x1024), optionally followed by B or iB\n"
          "  -e, --maxbytes SIZE     largest message (default 32M)\n"
          "  -f, --stepfactor N      multiply the size by N each step (default 2)\n"
          "  -i, --stepbytes SIZE    add SIZE each step instead (default: use -f)\n"
          "  -n, --iters N           timed iterations per size (default 20)\n"
          "  -w, --warmup_iters N    untimed iterations first (default 5)\n"
          "  -c, --check 0|1         check results against an fp64 host reference (default 1)\n"
          "  -d, --datatype LIST     float, half, bfloat16 (comma separated, or all; default bfloat16)\n"
          "  -o, --op LIST           allreduce, reduce_scatter, allgather, alltoall (comma separated,\n"
          "                          or all; default allreduce)\n"
          "  -C, --codec LIST        codec specs, comma separated (default taco), e.g. taco,fp8-block,\n"
          "                          taco:block=128; 'none' measures the plain path against itself\n"
          "  -G, --cudagraph N       capture the -n iterations in a CUDA graph, launch it N times\n"
          "                          (default 0: no graph)\n"
          "  -J, --output_file FILE  also write the results as JSON to FILE (rank 0)\n"
          "      --loopback N        N communicators (1 to 64) on one GPU (libtaco's loopback transport)\n"
          "      --check-max SIZE    check sizes up to SIZE only; '-' above (default 64M)\n"
          "      --fallback SIZE     the communicators' fallbackBytes (default: TACO_FALLBACK_BYTES or\n"
          "                          the library default); 0 compresses every size\n"
          "      --chunk SIZE        the communicators' chunkBytes (default: TACO_CHUNK_BYTES / library)\n"
          "      --depth N           the communicators' pipelineDepth, 1 to 16 (default: TACO_PIPELINE_DEPTH /\n"
          "                          library)\n"
          "      --algo NAME         the AllReduce algorithm of the -C communicators, one of\n"
          "                          %s\n"
          "                          (default: TACO_ALGO, else auto); a row whose communicator cannot\n"
          "                          run it is skipped\n"
          "      --diy 0|1           measure the do-it-yourself baseline (allreduce only; default 1)\n"
          "      --seed N            seed of the input data, decimal (default 31424)\n"
          "      --id-file PATH      without MPI: rank 0 writes the NCCL unique ids to PATH, the other\n"
          "                          ranks read them (shared file system; rank and size from RANK/WORLD_SIZE,\n"
          "                          OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/SIZE or SLURM_PROCID with srun's\n"
          "                          SLURM_STEP_NUM_TASKS, the first found)\n"
          "  -h, --help              this text\n"
          "\n"
          "Exit status: 0 success, 1 runtime failure or failed check, 2 bad arguments.\n"
          "Columns and formulas: docs/perf-tool.md.\n",
          algoList(", ").c_str());
}

namespace {

int usageError(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
int usageError(const char* fmt, ...) {
  fprintf(stderr, "taco_perf: error: ");
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n(run 'taco_perf --help' for usage)\n");
  return 2;
}

bool parseInt(const char* s, long long lo, long long hi, long long* out) {
  if (s == nullptr || *s == '\0') return false;
  errno = 0;
  char* end = nullptr;
  long long v = strtoll(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool parseU64(const char* s, uint64_t* out) {
  if (s == nullptr || *s == '\0') return false;
  for (const char* p = s; *p; ++p)  // decimal digits only: "010" is ten, not octal eight; no sign, no space
    if (*p < '0' || *p > '9') return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0') return false;
  *out = v;
  return true;
}

std::vector<std::string> splitList(const char* s) {
  std::vector<std::string> out;
  std::string cur;
  for (const char* p = s;; ++p) {
    if (*p == ',' || *p == '\0') {
      out.push_back(cur);
      cur.clear();
      if (*p == '\0') break;
    } else {
      cur += *p;
    }
  }
  return out;
}

bool parseDtype(const std::string& s, tacoDataType_t* t) {
  if (s == "float" || s == "float32" || s == "fp32" || s == "f32") *t = tacoFloat32;
  else if (s == "half" || s == "float16" || s == "fp16" || s == "f16") *t = tacoFloat16;
  else if (s == "bfloat16" || s == "bf16") *t = tacoBfloat16;
  else return false;
  return true;
}

// The library's names (tacoAlgoName), as TACO_ALGO spells them.
bool parseAlgo(const std::string& s, int* algo) {
  for (int a = 0; a < tacoNumAlgos; ++a)
    if (s == tacoAlgoName((tacoAlgo_t)a)) {
      *algo = a;
      return true;
    }
  return false;
}

bool parseColl(const std::string& s, Coll* c) {
  if (s == "allreduce" || s == "all_reduce") *c = kAllReduce;
  else if (s == "reduce_scatter" || s == "reducescatter") *c = kReduceScatter;
  else if (s == "allgather" || s == "all_gather") *c = kAllGather;
  else if (s == "alltoall" || s == "all_to_all") *c = kAlltoAll;
  else return false;
  return true;
}

// Long and short names of the options that take a value.
struct Flag {
  const char* shortName;  // "-b" or nullptr
  const char* longName;   // "--minbytes"
};
const Flag kFlags[] = {
    {"-b", "--minbytes"}, {"-e", "--maxbytes"},    {"-f", "--stepfactor"}, {"-i", "--stepbytes"},
    {"-n", "--iters"},    {"-w", "--warmup_iters"}, {"-c", "--check"},      {"-d", "--datatype"},
    {"-o", "--op"},       {"-C", "--codec"},        {"-G", "--cudagraph"},  {"-J", "--output_file"},
    {nullptr, "--loopback"}, {nullptr, "--check-max"}, {nullptr, "--fallback"}, {nullptr, "--chunk"},
    {nullptr, "--depth"},    {nullptr, "--diy"},       {nullptr, "--seed"},     {nullptr, "--id-file"},
    {nullptr, "--algo"},
};

// The canonical (long) name of `arg`, or nullptr if it is not a known option.
const char* canonical(const std::string& arg) {
  for (const Flag& f : kFlags)
    if ((f.shortName && arg == f.shortName) || arg == f.longName) return f.longName;
  return nullptr;
}

}  // namespace

bool canWriteFile(const char* path) {
  errno = 0;
  struct stat st;
  if (stat(path, &st) == 0) return !S_ISDIR(st.st_mode) && access(path, W_OK) == 0;
  std::string dir(path);
  const size_t slash = dir.find_last_of('/');
  dir = slash == std::string::npos ? "." : slash == 0 ? "/" : dir.substr(0, slash);
  return access(dir.c_str(), W_OK | X_OK) == 0;
}

const char* algoName(int algo) {
  const char* name = tacoAlgoName((tacoAlgo_t)algo);
  return name != nullptr ? name : "?";
}

bool parseBytes(const char* s, size_t* out) {
  if (s == nullptr || *s == '\0' || *s == '-' || *s == '+') return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || end == s) return false;
  unsigned long long mult = 1;
  switch (*end) {
    case 'k': case 'K': mult = 1ull << 10; ++end; break;
    case 'm': case 'M': mult = 1ull << 20; ++end; break;
    case 'g': case 'G': mult = 1ull << 30; ++end; break;
    case 't': case 'T': mult = 1ull << 40; ++end; break;
    default: break;
  }
  if (mult != 1 && *end == 'i') ++end;     // "MiB"
  if (*end == 'b' || *end == 'B') ++end;   // "MB", "B"
  if (*end != '\0') return false;
  if (v != 0 && mult > (~0ull) / v) return false;
  if (v * mult > (1ull << 48)) return false;  // 256 TiB: beyond any device, and no wrap when rounded up
  *out = (size_t)(v * mult);
  return true;
}

int parseArgs(int argc, char** argv, Options* o) {
  bool sawStepFactor = false, sawStepBytes = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    const char* inlineValue = nullptr;
    // --name=value
    if (arg.size() > 2 && arg[0] == '-' && arg[1] == '-') {
      size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        inlineValue = argv[i] + eq + 1;
        arg = arg.substr(0, eq);
      }
    }
    if (arg == "-h" || arg == "--help") {
      o->help = true;
      return 0;
    }
    const char* name = canonical(arg);
    if (name == nullptr) {
      if (arg.size() > 1 && arg[0] == '-')
        return usageError("unknown option '%s'", argv[i]);
      return usageError("unexpected argument '%s' (options start with '-')", argv[i]);
    }
    const char* v = inlineValue;
    if (v == nullptr) {
      if (i + 1 >= argc) return usageError("option '%s' needs a value", arg.c_str());
      v = argv[++i];
    }
    const std::string n = name;
    long long iv = 0;
    size_t bv = 0;
#define PERF_INT(lo, hi, what)                                                                          \
  if (!parseInt(v, lo, hi, &iv))                                                                        \
    return usageError("%s: '%s' is not %s", arg.c_str(), v, what);
#define PERF_BYTES(what)                                                                                \
  if (!parseBytes(v, &bv))                                                                              \
    return usageError("%s: '%s' is not %s (a byte count such as 4096, 64K, 32M, 1G)", arg.c_str(), v, what);
    if (n == "--minbytes") {
      PERF_BYTES("a size");
      if (bv == 0) return usageError("%s: the size must be > 0", arg.c_str());
      o->minBytes = bv;
    } else if (n == "--maxbytes") {
      PERF_BYTES("a size");
      if (bv == 0) return usageError("%s: the size must be > 0", arg.c_str());
      o->maxBytes = bv;
    } else if (n == "--stepfactor") {
      PERF_INT(2, 1 << 20, "an integer >= 2");
      o->stepFactor = (int)iv;
      sawStepFactor = true;
    } else if (n == "--stepbytes") {
      PERF_BYTES("a size");
      if (bv == 0) return usageError("%s: the step must be > 0", arg.c_str());
      o->stepBytes = bv;
      sawStepBytes = true;
    } else if (n == "--iters") {
      PERF_INT(1, 1 << 30, "an integer >= 1");
      o->iters = (int)iv;
    } else if (n == "--warmup_iters") {
      PERF_INT(0, 1 << 30, "an integer >= 0");
      o->warmup = (int)iv;
    } else if (n == "--check") {
      PERF_INT(0, 1, "0 or 1");
      o->check = (int)iv;
    } else if (n == "--cudagraph") {
      PERF_INT(0, 1 << 30, "an integer >= 0");
      o->graphIters = (int)iv;
    } else if (n == "--output_file") {
      if (*v == '\0') return usageError("%s: empty file name", arg.c_str());
      o->jsonPath = v;  // rank 0 checks it can write there once the ranks are known (main)
    } else if (n == "--datatype") {
      o->dtypes.clear();
      for (const std::string& s : splitList(v)) {
        if (s == "all") {
          o->dtypes.insert(o->dtypes.end(), {tacoFloat32, tacoFloat16, tacoBfloat16});
          continue;
        }
        tacoDataType_t t;
        if (!parseDtype(s, &t))
          return usageError("%s: unknown datatype '%s' (float, half, bfloat16 or all)", arg.c_str(), s.c_str());
        o->dtypes.push_back(t);
      }
      // A repeat would measure the same rows twice and count them twice in the summary.
      for (size_t i = 0; i < o->dtypes.size(); ++i)
        for (size_t j = 0; j < i; ++j)
          if (o->dtypes[i] == o->dtypes[j])
            return usageError("%s: datatype %s is listed twice in '%s' ('all' includes every one)", arg.c_str(),
                              dtypeName(o->dtypes[i]), v);
    } else if (n == "--op") {
      o->colls.clear();
      for (const std::string& s : splitList(v)) {
        if (s == "all") {
          o->colls.insert(o->colls.end(), {kAllReduce, kReduceScatter, kAllGather, kAlltoAll});
          continue;
        }
        Coll c;
        if (!parseColl(s, &c))
          return usageError("%s: unknown collective '%s' (allreduce, reduce_scatter, allgather, alltoall or all)",
                            arg.c_str(), s.c_str());
        o->colls.push_back(c);
      }
      for (size_t i = 0; i < o->colls.size(); ++i)
        for (size_t j = 0; j < i; ++j)
          if (o->colls[i] == o->colls[j])
            return usageError("%s: collective %s is listed twice in '%s' ('all' includes every one)", arg.c_str(),
                              collName(o->colls[i]), v);
    } else if (n == "--codec") {
      o->codecs.clear();
      for (const std::string& s : splitList(v)) {
        tacoCodec_t codec;
        if (s.empty()) return usageError("%s: empty codec spec in '%s'", arg.c_str(), v);
        if (tacoCodecFind(s.c_str(), &codec) != tacoSuccess)
          return usageError("%s: codec '%s': %s", arg.c_str(), s.c_str(), tacoGetLastError(nullptr));
        for (const std::string& before : o->codecs) {  // the same codec by another spelling counts too
          tacoCodec_t b;
          if (tacoCodecFind(before.c_str(), &b) == tacoSuccess && b.id == codec.id && b.blockSize == codec.blockSize)
            return usageError("%s: codec '%s' is listed twice in '%s' (as '%s' before)", arg.c_str(), s.c_str(), v,
                              before.c_str());
        }
        o->codecs.push_back(s);
      }
    } else if (n == "--loopback") {
      PERF_INT(1, 64, "a rank count from 1 to 64");  // the library's loopback worlds (tacoCommInitLoopback)
      o->loopback = (int)iv;
    } else if (n == "--check-max") {
      PERF_BYTES("a size");
      o->checkMaxBytes = bv;
    } else if (n == "--fallback") {
      PERF_BYTES("a size");
      o->fallbackBytes = (long long)bv;
    } else if (n == "--chunk") {
      PERF_BYTES("a size");
      if (bv == 0) return usageError("%s: the chunk must be > 0", arg.c_str());
      o->chunkBytes = (long long)bv;
    } else if (n == "--depth") {
      PERF_INT(1, 16, "an integer from 1 to 16");  // the library's pipelineDepth range
      o->pipelineDepth = (int)iv;
    } else if (n == "--algo") {
      if (!parseAlgo(v, &o->algo))
        return usageError("%s: unknown algorithm '%s' (%s)", arg.c_str(), v, algoList(" or ").c_str());
    } else if (n == "--diy") {
      PERF_INT(0, 1, "0 or 1");
      o->diy = (int)iv;
    } else if (n == "--seed") {
      if (!parseU64(v, &o->seed)) return usageError("%s: '%s' is not an unsigned integer", arg.c_str(), v);
    } else if (n == "--id-file") {
      if (*v == '\0') return usageError("%s: empty file name", arg.c_str());
      o->idFile = v;
    }
#undef PERF_INT
#undef PERF_BYTES
  }
  if (o->dtypes.empty()) return usageError("-d: no datatype given");
  if (o->colls.empty()) return usageError("-o: no collective given");
  if (o->codecs.empty()) return usageError("-C: no codec given");
  if (sawStepFactor && sawStepBytes) return usageError("-f and -i are exclusive: give one of them");
  if (o->minBytes > o->maxBytes)
    return usageError("-b (minimum size, %zu bytes) is larger than -e (maximum size, %zu bytes)", o->minBytes,
                      o->maxBytes);
  return 0;
}

}  // namespace perf
