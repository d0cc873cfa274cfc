# ctest host.install_package: install the build into a staging prefix, then build and run
# a consumer through find_package(taco) and through pkg-config.
#   cmake -DBUILD_DIR=... -DSTAGE=... -DSRC=... -DCC=... -DGENERATOR=... -P run.cmake
file(REMOVE_RECURSE "${STAGE}")
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "FAILED (${rc}): ${cmd}\n${out}\n${err}")
  endif()
  set(run_out "${out}" PARENT_SCOPE)
endfunction()

run("${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${STAGE}/prefix")
set(passed 0)

# 1. CMake package
run("${CMAKE_COMMAND}" -S "${SRC}" -B "${STAGE}/consumer" -G "${GENERATOR}"
    "-DCMAKE_C_COMPILER=${CC}" "-DCMAKE_PREFIX_PATH=${STAGE}/prefix")
run("${CMAKE_COMMAND}" --build "${STAGE}/consumer")
run("${STAGE}/consumer/consumer")
message("find_package(taco): ${run_out}")
math(EXPR passed "${passed} + 1")

# 2. pkg-config
find_program(PKG_CONFIG pkg-config)
if(PKG_CONFIG)
  file(GLOB_RECURSE pcs "${STAGE}/prefix/*/taco.pc")
  list(GET pcs 0 pc)
  get_filename_component(pcdir "${pc}" DIRECTORY)
  set(ENV{PKG_CONFIG_PATH} "${pcdir}")
  run("${PKG_CONFIG}" --cflags --libs taco)
  string(STRIP "${run_out}" flags)
  separate_arguments(flags UNIX_COMMAND "${flags}")
  run("${CC}" "${SRC}/consumer.c" ${flags} -o "${STAGE}/consumer_pc")
  string(REGEX MATCHALL "-L[^ ;]+" libdirs "${flags}")
  string(REPLACE "-L" "" libdirs "${libdirs}")
  string(REPLACE ";" ":" libdirs "${libdirs}")
  set(ENV{LD_LIBRARY_PATH} "${libdirs}")
  run("${STAGE}/consumer_pc")
  message("pkg-config taco: ${run_out}")
  math(EXPR passed "${passed} + 1")

  # 3. README's C example, as printed, built with `cc app.c $(pkg-config --cflags --libs taco)`:
  # it includes cuda_runtime.h and calls cudaMalloc. main() only links it and checks the
  # version (no GPU here).
  file(READ "${README}" readme)
  set(opening "### C\n\n```c\n")
  string(FIND "${readme}" "${opening}" at)
  if(at LESS 0)
    message(FATAL_ERROR "README.md has no '### C' section with a ```c block")
  endif()
  string(LENGTH "${opening}" n)
  math(EXPR at "${at} + ${n}")
  string(SUBSTRING "${readme}" ${at} -1 rest)
  string(FIND "${rest}" "```" end)
  string(SUBSTRING "${rest}" 0 ${end} snippet)
  file(WRITE "${STAGE}/readme_c.c" "${snippet}
/* added by tests/host/package/run.cmake */
int main(void) {
  int (*volatile example)(const void*, void*, size_t, cudaStream_t) = roundtrip;
  return example != NULL && tacoGetVersion() == TACO_VERSION_CODE ? 0 : 1;
}
")
  run("${CC}" "${STAGE}/readme_c.c" ${flags} -o "${STAGE}/readme_c")
  run("${STAGE}/readme_c")
  message("README's C example with pkg-config taco: built and linked")
  math(EXPR passed "${passed} + 1")
else()
  message("pkg-config not found: pkg-config check not run")
endif()
message("${passed} passed, 0 failed")
