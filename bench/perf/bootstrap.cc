// taco_perf's process model: which rank this process is, and how the NCCL
// unique ids reach every rank (MPI_Bcast, or --id-file without MPI); plus the
// fatal-error exit, which must abort the whole MPI job.
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <unistd.h>

#ifdef TACO_PERF_MPI
#include <mpi.h>
#endif

#include "common.h"

namespace perf {
namespace {

int gWorldRank = 0;
[[maybe_unused]] bool gMpiActive = false;

[[maybe_unused]] int envInt(const char* name, int dflt) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return dflt;
  char* end = nullptr;
  long x = strtol(v, &end, 10);
  return (end != v && *end == '\0') ? (int)x : dflt;
}

}  // namespace

void fatalExit(int code) {
  fflush(stdout);
  fflush(stderr);
#ifdef TACO_PERF_MPI
  if (gMpiActive) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  exit(code);
}

void fatalCode(int code, const char* fmt, ...) {
  fprintf(stderr, "taco_perf: rank %d: error: ", gWorldRank);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n");
  fatalExit(code);
}

Boot bootstrap(int* argc, char*** argv) {
  Boot b;
#ifdef TACO_PERF_MPI
  MPI_Init(argc, argv);
  gMpiActive = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &b.size);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, b.rank, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &b.localRank);
  MPI_Comm_free(&local);
#else
  (void)argc;
  (void)argv;
  // Launchers' conventions, first found wins: torchrun's (RANK) first, since it is the innermost
  // launcher when it runs under srun or mpirun (whose variables then describe the torchrun
  // processes, one per node, not the ranks); SLURM's last, since mpirun and PMI inside an
  // allocation leave SLURM_PROCID of the allocation's step. Its size is srun's
  // SLURM_STEP_NUM_TASKS, not SLURM_NTASKS, which a batch script has too (one process, PROCID 0).
  static const char* kEnv[][3] = {{"RANK", "WORLD_SIZE", "LOCAL_RANK"},
                                  {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
                                  {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
                                  {"SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID"}};
  for (auto& e : kEnv) {
    int r = envInt(e[0], -1), s = envInt(e[1], -1);
    if (r >= 0 && s >= 1 && r < s) {
      b.rank = r;
      b.size = s;
      b.localRank = envInt(e[2], r);
      break;
    }
  }
#endif
  gWorldRank = b.rank;
  return b;
}

void checkLaunch(const Boot& b, bool loopback) {
#ifdef TACO_PERF_MPI
  // One MPI rank where a launcher says there are several (torchrun, srun without PMI, another
  // MPI's mpirun): each process would run a one-rank job of its own and report it as a success.
  // --loopback runs in one process anyway: a WORLD_SIZE it inherits (a torchrun job's) is no sign.
  if (b.size == 1 && !loopback)
    for (const char* v : {"WORLD_SIZE", "SLURM_STEP_NUM_TASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
      if (envInt(v, 1) > 1)
        fatalCode(2, "MPI reports one rank, but %s=%d: taco_perf was launched without this MPI (torchrun, srun "
                     "without PMI, or another MPI's launcher); launch it with this MPI's mpirun or srun --mpi, or "
                     "use a build without MPI",
                  v, envInt(v, 1));
#else
  (void)b;
  (void)loopback;
#endif
}

void finalizeBoot() {
#ifdef TACO_PERF_MPI
  if (gMpiActive) MPI_Finalize();
  gMpiActive = false;
#endif
}

std::vector<tacoUniqueId> shareUniqueIds(const Boot& b, const Options& o, int n) {
  std::vector<tacoUniqueId> ids(n);
  if (b.rank == 0)
    for (int i = 0; i < n; ++i) TACOCHECK(tacoGetUniqueId(&ids[i]), nullptr);
  if (b.size == 1) return ids;
#ifdef TACO_PERF_MPI
  (void)o;
  MPI_Bcast(ids.data(), (int)(n * sizeof(tacoUniqueId)), MPI_BYTE, 0, MPI_COMM_WORLD);
#else
  const size_t bytes = n * sizeof(tacoUniqueId);
  if (o.idFile.empty())
    fatalCode(2,
              "%d ranks found in the environment, but this taco_perf was built without MPI: pass --id-file PATH "
              "(a path on a file system every rank sees) to exchange the NCCL unique ids",
              b.size);
  if (b.rank == 0) {
    if (access(o.idFile.c_str(), F_OK) == 0)
      fatalCode(2, "--id-file %s exists already (left by an earlier run?): remove it first", o.idFile.c_str());
    const std::string tmp = o.idFile + ".tmp." + std::to_string(getpid());
    FILE* f = fopen(tmp.c_str(), "wb");
    if (f == nullptr || fwrite(ids.data(), 1, bytes, f) != bytes || fclose(f) != 0)
      fatal("cannot write %s", tmp.c_str());
    if (rename(tmp.c_str(), o.idFile.c_str()) != 0) fatal("cannot rename %s to %s", tmp.c_str(), o.idFile.c_str());
  } else {
    const auto t0 = std::chrono::steady_clock::now();
    for (;;) {
      FILE* f = fopen(o.idFile.c_str(), "rb");
      if (f != nullptr) {
        size_t got = fread(ids.data(), 1, bytes, f);
        fclose(f);
        if (got == bytes) break;
      }
      if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(300))
        fatal("waited 300 s for rank 0 to write --id-file %s", o.idFile.c_str());
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
#endif
  return ids;
}

}  // namespace perf
