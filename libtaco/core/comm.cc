#include "core/comm.h"

#include "core/check.h"

namespace taco {

void commRecordError(tacoComm* c) {
  if (c != nullptr) c->lastError = lastError();
}

bool commHasPeerMemory(const tacoComm* c) { return c != nullptr && c->peer != nullptr; }

const char* commLastError(const tacoComm* c) { return c != nullptr ? c->lastError.c_str() : ""; }

}  // namespace taco
