# taco_perf's command line (registered by bench/CMakeLists.txt as host.perf_cli):
# bad arguments give a clear message on stderr and exit code 2, before any CUDA
# call, so this runs on machines without a GPU.
#   cmake -DPERF=/path/to/taco_perf -P tests/host/test_perf_cli.cmake
if(NOT PERF OR NOT EXISTS "${PERF}")
  message(FATAL_ERROR "set -DPERF=<path to taco_perf> (got '${PERF}')")
endif()

set(_passed 0)
set(_failed 0)

# expect(<exit code> <regex on stderr (or stdout for exit 0)> args...)
function(expect rc regex)
  execute_process(COMMAND "${PERF}" ${ARGN}
    RESULT_VARIABLE got OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
  string(REPLACE ";" " " shown "${ARGN}")
  set(text "${err}")
  if(rc EQUAL 0)
    set(text "${out}")
  endif()
  if(NOT "${got}" STREQUAL "${rc}")
    message(SEND_ERROR "FAIL taco_perf ${shown}: exit ${got}, expected ${rc}\n  stdout: ${out}\n  stderr: ${err}")
    math(EXPR n "${_failed} + 1")
    set(_failed ${n} PARENT_SCOPE)
  elseif(NOT text MATCHES "${regex}")
    message(SEND_ERROR "FAIL taco_perf ${shown}: output does not match '${regex}'\n  stdout: ${out}\n  stderr: ${err}")
    math(EXPR n "${_failed} + 1")
    set(_failed ${n} PARENT_SCOPE)
  else()
    string(STRIP "${text}" first)
    string(REGEX REPLACE "\n.*" "" first "${first}")
    message(STATUS "ok   taco_perf ${shown}  ->  ${first}")
    math(EXPR n "${_passed} + 1")
    set(_passed ${n} PARENT_SCOPE)
  endif()
endfunction()

# Sizes
expect(2 "error: -b \\(minimum size, 1024 bytes\\) is larger than -e \\(maximum size, 512 bytes\\)" -b 1K -e 512)
expect(2 "error: -b: '12Q' is not a size" -b 12Q)
expect(2 "error: -e: '-5' is not a size" -e -5)
expect(2 "error: -b: the size must be > 0" -b 0)
# a list that names something twice would measure it twice and count it twice in the summary
expect(2 "error: -d: datatype float is listed twice in 'all,float'" -d all,float)
expect(2 "error: -o: collective allreduce is listed twice in 'allreduce,all'" -o allreduce,all)
expect(2 "error: -C: codec 'taco:block=256' is listed twice in 'taco,taco:block=256' \\(as 'taco' before\\)" -C taco,taco:block=256)
# sizes beyond 256 TiB are refused, not wrapped when the buffers are rounded up
expect(2 "error: -e: '18446744073709551615' is not a size" -e 18446744073709551615)
expect(2 "error: -e: '300T' is not a size" -e 300T)
expect(2 "error: --maxbytes: 'lots' is not a size" --maxbytes lots)
expect(2 "error: -f: '1' is not an integer >= 2" -f 1)
expect(2 "error: -f and -i are exclusive" -f 2 -i 1M)
expect(2 "error: --check-max: 'x' is not a size" --check-max x)
# Numbers
expect(2 "error: -n: 'abc' is not an integer >= 1" -n abc)
expect(2 "error: -n: '0' is not an integer >= 1" -n 0)
expect(2 "error: -w: '1.5' is not an integer >= 0" -w 1.5)
expect(2 "error: -c: '2' is not 0 or 1" -c 2)
expect(2 "error: -G: '-1' is not an integer >= 0" -G -1)
expect(2 "error: --loopback: '0' is not a rank count from 1 to 64" --loopback 0)
expect(2 "error: --loopback: '4x' is not a rank count from 1 to 64" --loopback=4x)
expect(2 "error: --loopback: '65' is not a rank count from 1 to 64" --loopback 65)
expect(2 "error: --depth: '17' is not an integer from 1 to 16" --depth 17)
expect(2 "error: --seed: 'seven' is not an unsigned integer" --seed seven)
# decimal only: strtoull's base 0 read 010 as eight, 0x10 as sixteen, and ' -1' as 2^64 - 1
expect(2 "error: --seed: '010x' is not an unsigned integer" --seed 010x)
expect(2 "error: --seed: '0x10' is not an unsigned integer" --seed 0x10)
expect(2 "error: --seed: ' -1' is not an unsigned integer" "--seed= -1")
# Names
expect(2 "error: unknown option '--bogus'" --bogus)
expect(2 "error: unknown option '-x'" -x 3)
expect(2 "error: unexpected argument 'allreduce'" allreduce)
expect(2 "error: option '-b' needs a value" -b)
expect(2 "error: -d: unknown datatype 'int8'" -d int8)
expect(2 "error: -d: unknown datatype ''" -d float,)
expect(2 "error: -o: unknown collective 'broadcast'" -o allreduce,broadcast)
expect(2 "error: --algo: unknown algorithm 'bogus' \\(auto, plain, staged, fused, oneshot or oneshot-raw\\)" --algo bogus)
expect(2 "error: --algo: unknown algorithm 'Fused'" --algo=Fused)
expect(2 "error: --algo: unknown algorithm ''" --algo=)
expect(2 "error: option '--algo' needs a value" -C taco --algo)
# Codec specs: the library's own message (tacoGetLastError)
expect(2 "error: -C: codec 'zzz': .*unknown codec 'zzz'" -C taco,zzz)
expect(2 "error: -C: codec 'taco:block=3': .*block" -C taco:block=3)
expect(2 "error: -C: empty codec spec" -C taco,,fp8-block)
# Every usage error points at --help
expect(2 "run 'taco_perf --help' for usage" --bogus)
# Help
expect(0 "usage: taco_perf .*--loopback N" -h)
expect(0 "-J, --output_file FILE" --help)
expect(0 "--algo NAME +the AllReduce algorithm" --help)

# Good arguments get past parsing: with no visible GPU the run then fails at
# CUDA (exit 1, not the usage code 2) — on a GPU machine too.
set(ENV{CUDA_VISIBLE_DEVICES} "-1")
expect(1 "CUDA|device" -b 1K -e 4K -f 4 -d float,bf16 -o all -C taco,fp8-block,taco:block=128 --loopback 2 -c 0)
expect(1 "error: no usable CUDA device \\(cudaGetDeviceCount: .*\\): measuring needs a GPU" --loopback 2)
# Every algorithm name parses (the run then stops at the missing GPU, not at the arguments).
foreach(algo auto plain staged fused oneshot oneshot-raw)
  expect(1 "no usable CUDA device" -o all -C taco,none --algo ${algo} --loopback 2)
endforeach()
# A batch script's SLURM_PROCID and SLURM_NTASKS (no srun step) do not make its one process rank 0
# of several: --loopback runs (and stops at the missing GPU, not at "launch one process").
set(ENV{SLURM_PROCID} "0")
set(ENV{SLURM_NTASKS} "8")
expect(1 "no usable CUDA device" --loopback 2)
unset(ENV{SLURM_NTASKS})
unset(ENV{SLURM_PROCID})
# -J: a path rank 0 cannot write, or a directory, is refused before the run (after the arguments
# and the launch are known: only rank 0 writes it), not after it.
expect(2 "error: -J: cannot write '/nonexistent-dir/x.json': No such file or directory" -J /nonexistent-dir/x.json --loopback 2)
expect(2 "error: -J: cannot write '/tmp': a directory" -J /tmp --loopback 2)
unset(ENV{CUDA_VISIBLE_DEVICES})

message(STATUS "${_passed} passed, ${_failed} failed")
if(_failed GREATER 0)
  message(FATAL_ERROR "taco_perf CLI: ${_failed} case(s) failed")
endif()
