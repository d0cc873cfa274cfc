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
  string(REGEX MATCH "-L([^ ;]+)" _ "${flags}")
  set(ENV{LD_LIBRARY_PATH} "${CMAKE_MATCH_1}")
  run("${STAGE}/consumer_pc")
  message("pkg-config taco: ${run_out}")
  math(EXPR passed "${passed} + 1")
else()
  message("pkg-config not found: pkg-config check not run")
endif()
message("${passed} passed, 0 failed")
