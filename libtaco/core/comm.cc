#include "core/comm.h"

#include <mutex>

#include "core/check.h"

namespace taco {

namespace {
// Guards every communicator's lastError: tacoGetLastError(comm) may be called from any thread
// (a watchdog's), while the thread using the communicator records a failure.
std::mutex gLastErrorMutex;
}  // namespace

bool commIsLive(const tacoComm* c) { return c != nullptr && c->magic == kCommMagicLive; }

void commRecordError(tacoComm* c) {
  if (!commIsLive(c)) return;
  std::lock_guard<std::mutex> lock(gLastErrorMutex);
  c->lastError = lastError();
}

bool commHasPeerMemory(const tacoComm* c) { return c != nullptr && c->peer != nullptr; }

const char* commLastError(const tacoComm* c) {
  if (!commIsLive(c)) return "";
  static thread_local std::string copy;  // the caller's own copy: valid until its next call
  std::lock_guard<std::mutex> lock(gLastErrorMutex);
  copy = c->lastError;
  return copy.c_str();
}

uintptr_t commThreadToken() {
  static thread_local char token;
  return (uintptr_t)&token;
}

tacoResult_t commAcquire(tacoComm* c, const char* op, bool* taken) {
  const uintptr_t me = commThreadToken();
  uintptr_t holder = 0;
  *taken = c->user.compare_exchange_strong(holder, me, std::memory_order_acquire);
  if (*taken || holder == me) return tacoSuccess;
  return setError(tacoInvalidUsage,
                  "%s: comm argument %p is in use by another host thread (a call in progress, or collectives "
                  "queued in that thread's open group); a communicator takes one call at a time: serialise "
                  "the threads' calls, or give each thread a communicator of its own",
                  op, (const void*)c);
}

void commRelease(tacoComm* c, bool taken) {
  if (!taken) return;
  if (c->pendingOps == 0) c->user.store(0, std::memory_order_release);
  else c->heldForGroup = true;  // kept for the open group: its tacoGroupEnd gives it back
}

void commReleaseAfterGroup(tacoComm* c) {
  // Only a hold the group kept: a group the library runs inside a call (the tuner's, at the first
  // AllReduce) must not give back the hold of the call around it.
  if (!c->heldForGroup) return;
  c->heldForGroup = false;
  uintptr_t me = commThreadToken();
  c->user.compare_exchange_strong(me, 0, std::memory_order_release);
}

}  // namespace taco
