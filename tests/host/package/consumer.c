/* Links against an installed libtaco and checks that header and library agree. */
#include <stdio.h>

#include <taco.h>

int main(void) {
  tacoConfig_t config = TACO_CONFIG_INITIALIZER;
  int ok = tacoGetVersion() == TACO_VERSION_CODE && config.magic == TACO_CONFIG_MAGIC &&
           tacoGetErrorString(tacoInvalidArgument) != NULL;
  printf("libtaco %d, header %d: %s\n", tacoGetVersion(), TACO_VERSION_CODE, ok ? "ok" : "MISMATCH");
  return ok ? 0 : 1;
}
