// Element types (tacoDataType_t): their size in bytes. Every caller has checked
// the datatype (api/argcheck.h) before it gets here.
#pragma once
#include <cstddef>

#include "taco.h"

namespace taco {

constexpr size_t dtypeBytes(tacoDataType_t dtype) { return dtype == tacoFloat32 ? 4 : 2; }

// "float32", "float16", "bfloat16" (the names of the Python package and the tune cache); "?".
constexpr const char* dtypeName(tacoDataType_t dtype) {
  return dtype == tacoFloat32 ? "float32" : dtype == tacoFloat16 ? "float16" : dtype == tacoBfloat16 ? "bfloat16" : "?";
}

}  // namespace taco
