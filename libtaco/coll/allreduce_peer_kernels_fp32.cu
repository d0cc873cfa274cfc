// The peer-memory AllReduce kernels for fp32 (coll/device/peer_kernels.cuh): one file per
// element type, so that the three compile in parallel.
#include "coll/device/peer_kernels.cuh"

namespace taco {
template PeerKernel peerKernelFor<float>(int algo, int fmt, bool rot);
}  // namespace taco
