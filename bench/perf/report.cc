// taco_perf's output: the preamble, the table (one block per collective and
// datatype, one row per size and codec), the summary and the JSON file. The
// columns are documented in docs/perf-tool.md.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "common.h"

namespace perf {
namespace {

std::string fmtNum(double v, const char* fmt, bool valid = true) {
  if (!valid || std::isnan(v)) return "-";
  if (std::isinf(v)) return "inf";
  char b[64];
  snprintf(b, sizeof(b), fmt, v);
  return b;
}

// One format for the header and the rows: size, count, type, codec, algo, then
// taco (time, algbw, busbw), plain (time, algbw, busbw), speedup, wire, maxerr,
// rmserr, #diff, DIY (time, busbw, speedup, rmserr).
#define PERF_COLUMNS "%12s %12s %8s %-14s %-11s %9s %7s %7s  %9s %7s %7s  %7s %6s %9s %9s %5s  %9s %7s %7s %9s\n"

std::string jsonStr(const std::string& s) {
  std::string o = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') o += '\\', o += ch;
    else if ((unsigned char)ch < 0x20) o += ' ';
    else o += ch;
  }
  return o + "\"";
}

std::string jsonNum(double v, bool valid = true) {
  if (!valid || !std::isfinite(v)) return "null";
  char b[64];
  snprintf(b, sizeof(b), "%.6g", v);
  return b;
}

void jsonMeasure(FILE* f, const char* prefix, const Measure& m, size_t bytes, double factor) {
  const double alg = m.ran ? bytes / (m.us * 1e-6) / 1e9 : NAN;
  fprintf(f, ", \"%stime_us\": %s, \"%salgbw_gbps\": %s, \"%sbusbw_gbps\": %s", prefix, jsonNum(m.us, m.ran).c_str(),
          prefix, jsonNum(alg, m.ran).c_str(), prefix, jsonNum(alg * factor, m.ran).c_str());
  fprintf(f, ", \"%smax_rel_err\": %s, \"%srms_rel_err\": %s, \"%snonfinite\": %s", prefix,
          jsonNum(m.st.maxRel(), m.checked).c_str(), prefix, jsonNum(m.st.rmsRel(), m.checked).c_str(), prefix,
          jsonNum(m.st.nonfinite, m.checked).c_str());
  fprintf(f, ", \"%sranks_differing\": %s", prefix, m.diff < 0 ? "null" : std::to_string(m.diff).c_str());
}

void jsonStrings(FILE* f, const std::vector<std::string>& v) {
  for (size_t i = 0; i < v.size(); ++i) fprintf(f, "%s%s", i ? ", " : "", jsonStr(v[i]).c_str());
}

// The --algo setting of the -C communicators, as resolved by the library.
const char* configAlgo(const Ctx& c, int k) { return algoName(c.codecConfigs[k].algo); }

}  // namespace

void printPreamble(const Ctx& c) {
  const int v = tacoGetVersion();
  printf("# taco_perf: libtaco %d.%d.%d, %s, %d rank%s, %s\n", v / 10000, v / 100 % 100, v % 100,
         c.loopback ? "loopback transport" : "NCCL transport", c.P, c.P == 1 ? "" : "s", c.deviceName.c_str());
  printf("# sizes %zu..%zu bytes, %s %zu; iters %d, warmup %d, graph launches %d; check %s (up to %zu bytes)\n",
         c.o.minBytes, c.o.maxBytes, c.o.stepBytes ? "step" : "factor",
         c.o.stepBytes ? c.o.stepBytes : (size_t)c.o.stepFactor, c.o.iters, c.o.warmup, c.o.graphIters,
         c.o.check ? "on" : "off", c.o.checkMaxBytes);
  for (size_t k = 0; k < c.codecs.size(); ++k) {
    tacoCodecInfo_t info;
    TACOCHECK(tacoCodecGetInfo(c.codecs[k], &info), nullptr);
    size_t ws = 0;
    TACOCHECK(tacoCommWorkspaceBytes(c.ranks[0].comms[k], &ws), c.ranks[0].comms[k]);
    printf("# codec %-14s %s; block %d, chunk %zu B, fallback below %zu B, depth %d, algo %s, workspace %zu B/rank\n",
           c.o.codecs[k].c_str(), info.description, info.blockSize, c.codecConfigs[k].chunkBytes,
           c.codecConfigs[k].fallbackBytes, c.codecConfigs[k].pipelineDepth, configAlgo(c, (int)k), ws);
  }
  printf("# plain: the same call on a codec 'none' communicator, algorithm plain (%s)\n",
         c.loopback ? "the loopback's uncompressed kernels" : "plain NCCL");
  printf("# DIY (allreduce): per-block FP8 E4M3 quantize (256, absmax) -> plain all-gather of codes+scales ->"
         " dequantize and sum in fp32\n");
  printf("# algo: the AllReduce algorithm the call ran (tacoCommAllReduceAlgo); other collectives: plain or staged\n");
  printf("# busbw = algbw x %s on uncompressed bytes; speedup = plain time / taco time; wire = uncompressed /"
         " compressed bytes of one piece; '*' after the codec: the call ran uncompressed\n",
         "2(n-1)/n (allreduce) or (n-1)/n (others)");
  printf("# maxerr = max|y-exact| / max|exact|, rmserr = ||y-exact|| / ||exact|| (fp64 host reference); #diff = ranks"
         " whose output differs bitwise from rank 0's\n");
}

void printHeader(const Ctx& c, Coll coll, tacoDataType_t dt) {
  printf("#\n# %s, %s, %d rank%s (%s), %d iterations%s, warmup %d\n", collName(coll), dtypeName(dt), c.P,
         c.P == 1 ? "" : "s", c.loopback ? "loopback on one GPU" : "NCCL, one GPU per rank", c.o.iters,
         c.o.graphIters > 0 ? (" in a CUDA graph launched " + std::to_string(c.o.graphIters) + " times").c_str() : "",
         c.o.warmup);
  printf("# " PERF_COLUMNS, "", "", "", "", "", "<----", "taco", "---->", "<----", "plain", "---->", "", "", "", "",
         "", "<----", "DIY fp8", "---->", "");
  printf("# " PERF_COLUMNS, "size", "count", "type", "codec", "algo", "time", "algbw", "busbw", "time", "algbw",
         "busbw", "speedup", "wire", "maxerr", "rmserr", "#diff", "time", "busbw", "speedup", "rmserr");
  printf("# " PERF_COLUMNS, "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "(us)", "(GB/s)", "(GB/s)",
         "(x)", "(x)", "", "", "", "(us)", "(GB/s)", "(x)", "");
}

void printRow(const Ctx& c, const Row& r) {
  const CollDesc& d = collDesc(r.coll);
  const double algT = r.bytes / (r.taco.us * 1e-6) / 1e9;
  const double algP = r.bytes / (r.plain.us * 1e-6) / 1e9;
  const double algD = r.diy.ran ? r.bytes / (r.diy.us * 1e-6) / 1e9 : NAN;
  const double f = d.busFactor(c.P);
  const std::string codec = r.codec + (r.uncompressed && r.codec != "none" ? "*" : "");
  printf("  " PERF_COLUMNS, std::to_string(r.bytes).c_str(), std::to_string(r.count).c_str(), dtypeName(r.dt),
         codec.c_str(), algoName(r.algo), fmtNum(r.taco.us, "%.1f").c_str(), fmtNum(algT, "%.2f").c_str(),
         fmtNum(algT * f, "%.2f").c_str(), fmtNum(r.plain.us, "%.1f").c_str(), fmtNum(algP, "%.2f").c_str(),
         fmtNum(algP * f, "%.2f").c_str(), fmtNum(r.plain.us / r.taco.us, "%.2f").c_str(),
         fmtNum(r.wire, "%.2f").c_str(), fmtNum(r.taco.st.maxRel(), "%.2e", r.taco.checked).c_str(),
         fmtNum(r.taco.st.rmsRel(), "%.2e", r.taco.checked).c_str(),
         r.taco.diff < 0 ? "-" : std::to_string(r.taco.diff).c_str(), fmtNum(r.diy.us, "%.1f", r.diy.ran).c_str(),
         fmtNum(algD * f, "%.2f", r.diy.ran).c_str(), fmtNum(r.plain.us / r.diy.us, "%.2f", r.diy.ran).c_str(),
         fmtNum(r.diy.st.rmsRel(), "%.2e", r.diy.checked).c_str());
  fflush(stdout);
}

void printSkipped(const Ctx& c, tacoDataType_t dt, size_t bytes, size_t count, int k, const char* why) {
  printf("  %12zu %12zu %8s %-14s %-11s skipped: %s\n", bytes, count, dtypeName(dt), c.o.codecs[k].c_str(),
         configAlgo(c, k), why);
  fflush(stdout);
}

void printSummary(const Ctx& c, const std::vector<Row>& rows, const std::vector<std::string>& failures,
                  const std::vector<std::string>& skipped) {
  printf("#\n");
  for (size_t k = 0; k < c.codecs.size(); ++k) {
    double sT = 0, sP = 0, logSpeed = 0;
    int n = 0;
    for (const Row& r : rows) {
      if (r.codec != c.o.codecs[k]) continue;
      const double f = collDesc(r.coll).busFactor(c.P);
      sT += r.bytes / (r.taco.us * 1e-6) / 1e9 * f;
      sP += r.bytes / (r.plain.us * 1e-6) / 1e9 * f;
      logSpeed += std::log(r.plain.us / r.taco.us);
      ++n;
    }
    if (n > 0)
      printf("# codec %-14s avg busbw %.2f GB/s (plain %.2f GB/s), geometric-mean speedup %.3fx over %d rows\n",
             c.o.codecs[k].c_str(), sT / n, sP / n, std::exp(logSpeed / n), n);
  }
  if (!skipped.empty())
    printf("# skipped: %zu row%s: the communicator cannot run the forced algorithm (reasons on the rows above)\n",
           skipped.size(), skipped.size() == 1 ? "" : "s");
  size_t unchecked = 0;  // rows above --check-max: only #diff ran on them
  for (const Row& r : rows) unchecked += !r.taco.checked;
  if (failures.empty() && c.o.check && unchecked > 0) {
    printf("# check: OK (%zu of %zu rows above --check-max: their error was not checked, only #diff)\n", unchecked,
           rows.size());
  } else if (failures.empty()) {
    printf("# check: %s\n", c.o.check ? "OK" : "off");
  } else {
    printf("# check: %zu FAILED\n", failures.size());
    for (const std::string& s : failures) printf("#   FAILED %s\n", s.c_str());
  }
}

void writeJson(const Ctx& c, const std::vector<Row>& rows, const std::vector<std::string>& failures,
               const std::vector<std::string>& skipped) {
  FILE* f = fopen(c.o.jsonPath.c_str(), "w");
  if (f == nullptr) fatal("cannot open -J file %s for writing", c.o.jsonPath.c_str());
  fprintf(f, "{\n  \"tool\": \"taco_perf\",\n  \"libtaco_version\": %d,\n", tacoGetVersion());
  fprintf(f, "  \"mode\": \"%s\",\n  \"nranks\": %d,\n  \"device\": %s,\n", c.loopback ? "loopback" : "nccl", c.P,
          jsonStr(c.deviceName).c_str());
  fprintf(f, "  \"iters\": %d,\n  \"warmup_iters\": %d,\n  \"graph_iters\": %d,\n  \"check\": %d,\n", c.o.iters,
          c.o.warmup, c.o.graphIters, c.o.check);
  fprintf(f, "  \"check_max_bytes\": %zu,\n  \"seed\": %llu,\n  \"codecs\": [", c.o.checkMaxBytes,
          (unsigned long long)c.o.seed);
  for (size_t k = 0; k < c.codecs.size(); ++k)
    fprintf(f,
            "%s{\"spec\": %s, \"chunk_bytes\": %zu, \"fallback_bytes\": %zu, \"pipeline_depth\": %d, "
            "\"algo\": \"%s\"}",
            k ? ", " : "", jsonStr(c.o.codecs[k]).c_str(), c.codecConfigs[k].chunkBytes,
            c.codecConfigs[k].fallbackBytes, c.codecConfigs[k].pipelineDepth, configAlgo(c, (int)k));
  fprintf(f, "],\n  \"failures\": [");
  jsonStrings(f, failures);
  fprintf(f, "],\n  \"skipped\": [");
  jsonStrings(f, skipped);
  fprintf(f, "],\n  \"results\": [\n");
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const double factor = collDesc(r.coll).busFactor(c.P);
    fprintf(f, "    {\"collective\": \"%s\", \"type\": \"%s\", \"size_bytes\": %zu, \"count\": %zu, \"codec\": %s",
            collName(r.coll), dtypeName(r.dt), r.bytes, r.count, jsonStr(r.codec).c_str());
    fprintf(f, ", \"algo\": \"%s\", \"fallback\": %s, \"wire_ratio\": %s, \"bus_factor\": %s", algoName(r.algo),
            r.uncompressed ? "true" : "false", jsonNum(r.wire).c_str(), jsonNum(factor).c_str());
    jsonMeasure(f, "", r.taco, r.bytes, factor);
    jsonMeasure(f, "plain_", r.plain, r.bytes, factor);
    fprintf(f, ", \"speedup\": %s", jsonNum(r.plain.us / r.taco.us).c_str());
    jsonMeasure(f, "diy_", r.diy, r.bytes, factor);
    fprintf(f, ", \"diy_speedup\": %s}%s\n", jsonNum(r.plain.us / r.diy.us, r.diy.ran).c_str(),
            i + 1 < rows.size() ? "," : "");
  }
  fprintf(f, "  ]\n}\n");
  if (fclose(f) != 0) fatal("cannot write -J file %s", c.o.jsonPath.c_str());
}

}  // namespace perf
