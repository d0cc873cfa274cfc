#include "coll/tune_table.h"  // tests/host/test_tune_table.cc compiles this file directly

#include <cstring>

namespace taco {

int candidateAlgo(int cand) {
  static const int kAlgos[kNumCandidates] = {tacoAlgoPlain, tacoAlgoOneShotRaw, tacoAlgoOneShot, tacoAlgoFused,
                                             tacoAlgoFused, tacoAlgoStaged};
  return cand >= 0 && cand < kNumCandidates ? kAlgos[cand] : -1;
}

const char* candidateName(int cand) {
  static const char* const kNames[kNumCandidates] = {"plain", "oneshot-raw", "oneshot", "fused", "fused-large",
                                                     "staged"};
  return cand >= 0 && cand < kNumCandidates ? kNames[cand] : "?";
}

int candidateByName(const char* name) {
  for (int c = 0; c < kNumCandidates; ++c)
    if (strcmp(name, candidateName(c)) == 0) return c;
  return -1;
}

int candidateOf(int algo) {
  for (int c = 0; c < kNumCandidates; ++c)
    if (candidateAlgo(c) == algo) return c;
  return -1;
}

std::vector<size_t> tuneBuckets(size_t maxBytes) {
  std::vector<size_t> b{kTuneMinBytes};
  while (b.back() <= maxBytes / 2) b.push_back(b.back() * 2);
  return b;
}

std::vector<float> combineMax(const std::vector<std::vector<float>>& rows) {
  if (rows.empty()) return {};
  std::vector<float> out = rows[0];
  for (size_t r = 1; r < rows.size(); ++r)
    for (size_t i = 0; i < out.size() && i < rows[r].size(); ++i)
      if (rows[r][i] > out[i] || std::isnan(rows[r][i])) out[i] = std::isnan(rows[r][i]) ? kNoTime : rows[r][i];
  for (float& v : out)
    if (std::isnan(v)) v = kNoTime;  // a NaN time is no time
  return out;
}

size_t tuneLayoutSize(size_t nBuckets) { return nBuckets * kNumCandidates + kNumCandidates; }

bool tuneTableFrom(const std::string& key, const std::vector<size_t>& bytes, const std::vector<float>& flat,
                   TuneTable* out) {
  if (flat.size() != tuneLayoutSize(bytes.size())) return false;
  TuneTable t;
  t.key = key;
  t.bytes = bytes;
  const float* flags = flat.data() + bytes.size() * kNumCandidates;
  for (int c = 0; c < kNumCandidates; ++c)
    if (flags[c] != 0) t.demoted |= 1u << c;
  t.us.resize(bytes.size());
  for (size_t b = 0; b < bytes.size(); ++b)
    for (int c = 0; c < kNumCandidates; ++c) {
      const float v = flat[b * kNumCandidates + c];
      t.us[b][c] = (t.demoted >> c & 1u) || !(v > 0) || std::isinf(v) ? kNoTime : v;
    }
  t.hash = tuneHash(t);
  *out = std::move(t);
  return true;
}

namespace {
void fnv(uint64_t* h, const void* p, size_t n) {
  const unsigned char* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) *h = (*h ^ b[i]) * 0x100000001b3ull;
}
void fnv64(uint64_t* h, uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; ++i) b[i] = (unsigned char)(v >> (8 * i));
  fnv(h, b, 8);
}
}  // namespace

uint64_t tuneHash(const TuneTable& t) {
  uint64_t h = 0xcbf29ce484222325ull;
  fnv64(&h, t.key.size());
  fnv(&h, t.key.data(), t.key.size());
  fnv64(&h, t.bytes.size());
  for (size_t b = 0; b < t.bytes.size(); ++b) {
    fnv64(&h, t.bytes[b]);
    for (int c = 0; c < kNumCandidates; ++c) {
      uint32_t bits = 0;
      const float v = b < t.us.size() ? t.us[b][c] : kNoTime;
      memcpy(&bits, &v, 4);
      fnv64(&h, bits);
    }
  }
  fnv64(&h, t.demoted);
  if (t.requestedBytes != 0) fnv64(&h, t.requestedBytes);
  return h;
}

std::string tuneTableUncacheable(const TuneTable& t) {
  if (t.requestedBytes != 0 && (t.bytes.empty() || t.bytes.back() < t.requestedBytes))
    return "it was measured up to " + std::to_string(t.bytes.empty() ? 0 : t.bytes.back()) + " bytes of the " +
           std::to_string(t.requestedBytes) + " asked for (TACO_TUNE_MAX_BYTES; the free device memory allowed no more)";
  std::string names;
  for (int c = 0; c < kNumCandidates; ++c)
    if (t.transient >> c & 1u) names += std::string(names.empty() ? "" : ", ") + candidateName(c);
  if (!names.empty())
    return "it lacks " + names + " for a reason that may not recur (a timeout, an error, TACO_TUNE_FAULT or no memory "
           "for its scratch)";
  return "";
}

bool tuneFailureRecurs(const std::string& why) {
  return why.find(" differs from ") != std::string::npos && why.find("TACO_TUNE_FAULT") == std::string::npos;
}

int nearestBucket(const TuneTable& t, size_t bytes) {
  const int n = (int)t.bytes.size();
  if (n == 0) return -1;
  if (bytes <= t.bytes[0]) return 0;
  // Compared on a log scale, bytes^2 against the product of the neighbours (in long double: the
  // product of two sizes can pass 2^64).
  const long double x = (long double)bytes;
  for (int b = 0; b + 1 < n; ++b) {
    if (bytes > t.bytes[b + 1]) continue;
    return x * x >= (long double)t.bytes[b] * (long double)t.bytes[b + 1] ? b + 1 : b;
  }
  // Above the last bucket: a complete table's last row stands for every larger call (they run as
  // chunks of the sizes measured); a table cut short for memory has no row for sizes nearer the
  // buckets it could not measure, and the model decides those.
  const long double last = (long double)t.bytes[(size_t)n - 1];
  const bool cutShort = t.requestedBytes != 0 && t.bytes.back() < t.requestedBytes;
  return cutShort && x * x >= last * (2 * last) ? -1 : n - 1;
}

int tunedCandidate(const TuneRow& r, int modelAlgo) {
  const int m = candidateOf(modelAlgo);
  int best = -1;
  for (int c = 0; c < kNumCandidates; ++c)
    if (!std::isinf(r[c]) && (best < 0 || r[c] < r[best])) best = c;
  if (best < 0) return m;
  if (m >= 0 && !std::isinf(r[m]) && (double)r[best] > (1.0 - kTuneHysteresis) * (double)r[m]) return m;
  return best;
}

int tunedChoice(const TuneRow& r, int modelAlgo) {
  const int c = tunedCandidate(r, modelAlgo);
  return c >= 0 ? candidateAlgo(c) : modelAlgo;
}

}  // namespace taco
