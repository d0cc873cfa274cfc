// Which ranks share a host, from every rank's host identity (peerHostLayout gathers them).
// Pure functions, so that host tests can check them.
#pragma once
#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace taco {

// A host as the ranks compare it: its name and, where the kernel has one, its boot id
// (/proc/sys/kernel/random/boot_id, new at every boot). Machines that share a name (containers
// all called "localhost", nodes cloned from one image) then differ, and the ranks of one
// machine under one name still agree.
inline std::string hostIdentityOf(const std::string& name, const std::string& bootId) {
  return bootId.empty() ? name : name + " (boot " + bootId + ")";
}

// The bytes a rank sends of its identity (a NUL-terminated prefix): a host name of up to 64
// bytes (HOST_NAME_MAX) and a 36-character boot id fit.
constexpr size_t kHostIdentityBytes = 128;

struct HostLayout {
  int ranksOnThisHost = 0;   // ranks whose host name is this rank's, this one included
  bool oneHost = false;      // every rank is on one host (the same answer on every rank)
  bool firstOnHost = false;  // no lower rank is on this rank's host
  int mostOnOneHost = 0;     // the most ranks on one host (the same answer on every rank)
};

// `names`: every rank's host identity (hostIdentityOf), in rank order; `me`: this rank.
inline HostLayout hostLayoutOf(const std::vector<std::string>& names, int me) {
  HostLayout h;
  const int n = (int)names.size();
  if (me < 0 || me >= n) return h;
  h.firstOnHost = true;
  std::map<std::string, int> perHost;
  for (int q = 0; q < n; ++q) {
    const int onHost = ++perHost[names[(size_t)q]];
    if (onHost > h.mostOnOneHost) h.mostOnOneHost = onHost;
    if (q < me && names[(size_t)q] == names[(size_t)me]) h.firstOnHost = false;
  }
  h.ranksOnThisHost = perHost[names[(size_t)me]];
  h.oneHost = perHost.size() == 1;
  return h;
}

}  // namespace taco
