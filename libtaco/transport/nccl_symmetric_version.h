// Which loaded NCCL the nccl-symmetric peer-memory route accepts, given the NCCL
// headers (nccl_device.h) libtaco was compiled against (docs/collectives.md, "Peer
// memory and the fused kernels"). A pure function: tests/host checks the decision.
//
// Why the versions must be compared at all: the route hands NCCL structs laid out by the
// compiled headers (ncclDevCommRequirements in, ncclDevComm out) and reads the window
// (ncclWindow_vidmem, laid out by the loaded library) in a kernel built from them.
//   - NCCL < 2.28 has no symmetric windows or device API.
//   - 2.28.x: the structs carry no size or version, and their layout changed between
//     patch releases (2.28.7 inserted barrierCount before lsaBarrierCount in
//     ncclDevCommRequirements and grew ncclDevComm): only the very version compiled against
//     is safe, patch included.
//   - 2.29 and later: the structs begin with size, magic and version
//     (NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER), and the library translates the layouts of
//     the versions it supports and refuses the others (ncclInvalidUsage from
//     ncclDevCommCreate, which the route then reports). A library older than the headers
//     cannot know their layout: refused here. A newer one within major 2 is accepted.
// The window fields ncclGetLsaPointer reads (lsaFlatBase, stride4G) have kept their offsets
// from 2.28.3 through 2.30.
#pragma once

namespace taco {

constexpr int kNcclSymmetricFirst = 22800;   // NCCL_VERSION(2, 28, 0): windows and device API
constexpr int kNcclVersionedStructs = 22900; // NCCL_VERSION(2, 29, 0): size/magic/version in the structs

// nullptr when a library of version `runtimeVersion` (ncclGetVersion) may take the route
// with headers of `compiledVersion` (NCCL_VERSION_CODE of nccl_device.h; 0: built without
// them); otherwise why not, as a phrase for the log.
inline const char* ncclSymmetricVersionRefusal(int runtimeVersion, int compiledVersion) {
  if (compiledVersion <= 0) return "libtaco was built without nccl_device.h (NCCL >= 2.28 headers)";
  if (compiledVersion < kNcclSymmetricFirst) return "libtaco was built against NCCL headers older than 2.28";
  if (runtimeVersion < kNcclSymmetricFirst) return "the loaded NCCL is older than 2.28 (no symmetric memory)";
  if (runtimeVersion / 10000 != compiledVersion / 10000) return "the loaded NCCL has another major version";
  if (compiledVersion < kNcclVersionedStructs) {
    if (runtimeVersion != compiledVersion)
      return "2.28's device structs are unversioned and changed between patch releases: the loaded NCCL "
             "must be the very version libtaco was compiled against";
    return nullptr;
  }
  if (runtimeVersion < compiledVersion) return "the loaded NCCL is older than the headers libtaco was compiled against";
  return nullptr;
}

inline bool ncclSymmetricUsable(int runtimeVersion, int compiledVersion) {
  return ncclSymmetricVersionRefusal(runtimeVersion, compiledVersion) == nullptr;
}

}  // namespace taco
