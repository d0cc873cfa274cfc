#!/usr/bin/env bash
# The one test command for a fresh machine:  bash tools/test.sh
# Sets up .venv and builds libtaco with its tests (tools/setup.sh), compiles the host code with
# clang++ as a second compiler (tools/clang_check.sh, where clang++ is installed), runs the host
# C tests (ctest), installs the package with `pip install .` (reusing that build: no second
# compile) and the benchmark harness with `pip install ./bench/python`, then runs the Python
# tests: tests/python and tests/gpu. Without a GPU the GPU tests are deselected (-m "not gpu");
# with one, everything runs. Exits non-zero on any failure, and when pytest collects no test.
# Extra arguments go to pytest, e.g. bash tools/test.sh -k reference; TACO_CTEST_ARGS to ctest.
set -euo pipefail
export TACO_SETUP=test
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

if command -v clang++ >/dev/null 2>&1; then
  step "host code with clang++ (tools/clang_check.sh)" bash "$ROOT/tools/clang_check.sh" "$BUILD_DIR"
else
  say "clang++ not found: the second-compiler check is left out (.ci/run installs Debian's clang)"
fi

# The Python tests run against what users get: the package installed by `pip install .`
# (scikit-build-core) and the harness installed by `pip install ./bench/python` (pure Python;
# --no-deps: the library is the one just built). The wheel is built in $BUILD_DIR with the
# configure options of tools/setup.sh (build-dir, and the same definitions), so ninja finds
# every object up to date and only relinks: the CUDA code compiles once. --no-build-isolation
# reuses the venv's scikit-build-core and NCCL headers.
# TACO_TEST_WHEEL=0 runs the tests against the CMake build instead (TACO_LIBRARY=build-ci/libtaco.so,
# PYTHONPATH=python:bench/python).
if [ "${TACO_TEST_WHEEL:-1}" != 0 ]; then
  SKB=(-C build-dir="$BUILD_DIR")
  for d in "${CMAKE_DEFS[@]}"; do SKB+=(-C "cmake.define.${d#-D}"); done
  CMAKE_BUILD_PARALLEL_LEVEL="$JOBS" step "pip install . (the wheel, from $BUILD_DIR: taco/libtaco.so, taco/include/taco.h)" \
    "$PY" -m pip install --disable-pip-version-check -q --no-build-isolation "${SKB[@]}" "$ROOT"
  # Back to the CMake build's own configuration (install layout, SOVERSION): relinks only.
  restore_build() { configure_build >/dev/null && cmake --build "$BUILD_DIR" --parallel "$JOBS" >/dev/null; }
  step "reconfiguring $BUILD_DIR for the C tests (relinks only)" restore_build
fi

step "host tests (ctest)" \
  ctest --test-dir "$BUILD_DIR" --output-on-failure --parallel "$JOBS" --timeout 900 ${TACO_CTEST_ARGS:-}

if [ "${TACO_TEST_WHEEL:-1}" != 0 ]; then
  step "pip install ./bench/python (the benchmark harness: taco_bench)" \
    "$PY" -m pip install --disable-pip-version-check -q --no-deps --no-build-isolation "$ROOT/bench/python"
  unset TACO_LIBRARY TACO_INCLUDE PYTHONPATH
  # Prove the installed packages load their own library and header, not the source tree's,
  # and that the library's wheel holds the package `taco` only (the harness is its own).
  (cd "$VENV" && "$PY" - <<'PYEOF'
import importlib.metadata, pathlib, sys
import taco._lib as L
import taco_bench
pkg = pathlib.Path(L.__file__).resolve().parent
lib, hdr = pathlib.Path(L.library_path()).resolve(), pathlib.Path(L.header_path()).resolve()
assert "site-packages" in str(pkg), f"taco imported from {pkg}, not the installed package"
assert lib == pkg / "libtaco.so", f"library {lib} is not the packaged {pkg / 'libtaco.so'}"
assert hdr == pkg / "include" / "taco.h", f"header {hdr} is not the packaged one"
bench = pathlib.Path(taco_bench.__file__).resolve().parent
assert "site-packages" in str(bench), f"taco_bench imported from {bench}, not the installed package"
tops = {f.parts[0] for f in importlib.metadata.files("libtaco") if not f.parts[0].endswith((".dist-info", ".pth"))}
assert tops == {"taco"}, f"the libtaco wheel installed {sorted(tops)}, expected only taco/"
lib_handle = L.lib() if callable(L.lib) else L.lib
print(f"installed taco: {pkg} (libtaco version {lib_handle.tacoGetVersion()}); taco_bench: {bench}")
PYEOF
  )
fi

PYTEST_DIRS=()
for d in tests/python tests/gpu; do [ -d "$d" ] && PYTEST_DIRS+=("$d"); done
[ ${#PYTEST_DIRS[@]} -gt 0 ] || die "no Python test directories"
MARK=()
if has_gpu; then
  say "GPU found: the GPU tests are included"
else
  say "no GPU: the GPU tests are deselected (-m 'not gpu')"
  MARK=(-m "not gpu")
fi
rc=0
step "pytest ${PYTEST_DIRS[*]} ${MARK[*]}" "$PY" -m pytest "${PYTEST_DIRS[@]}" "${MARK[@]}" -q -rs "$@" || rc=$?
finish
if [ $rc -eq 5 ]; then die "pytest collected no tests"; fi
[ $rc -eq 0 ] || die "pytest failed (exit $rc)"
say "all tests passed"
