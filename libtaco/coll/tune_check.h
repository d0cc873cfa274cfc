// The tuner's check of a candidate (coll/tune.cc, step 2): its output on every rank driven here
// against its oracle's, bit for bit. The oracles: the staged two-shot for fused; the codec
// kernels for one-shot (every input compressed, then decompressed and summed in rank order); the
// fp32 sum in rank order (the loopback plain kernel) for raw one-shot.
#pragma once
#include <cstddef>
#include <string>

#include "coll/tune_world.h"

namespace taco {
namespace tuner {

// Checks `algo` at `count` on every rank driven here. Empty when it passes, else why not.
// `gaveUp` is set when a peer-memory kernel gave up waiting.
std::string check(Ctx& x, int algo, size_t count, bool* gaveUp);

}  // namespace tuner
}  // namespace taco
