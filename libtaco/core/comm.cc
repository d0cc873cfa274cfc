#include "core/comm.h"

#include "core/check.h"

namespace taco {

bool commIsLive(const tacoComm* c) { return c != nullptr && c->magic == kCommMagicLive; }

void commRecordError(tacoComm* c) {
  if (commIsLive(c)) c->lastError = lastError();
}

bool commHasPeerMemory(const tacoComm* c) { return c != nullptr && c->peer != nullptr; }

const char* commLastError(const tacoComm* c) { return commIsLive(c) ? c->lastError.c_str() : ""; }

}  // namespace taco
