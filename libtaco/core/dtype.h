// Element types (tacoDataType_t): their size in bytes. Every caller has checked
// the datatype (api/argcheck.h) before it gets here.
#pragma once
#include <cstddef>

#include "taco.h"

namespace taco {

constexpr size_t dtypeBytes(tacoDataType_t dtype) { return dtype == tacoFloat32 ? 4 : 2; }

}  // namespace taco
