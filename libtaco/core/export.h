// Marks the exported C entry points; everything else in libtaco is hidden.
#pragma once
#define TACO_API __attribute__((visibility("default")))
