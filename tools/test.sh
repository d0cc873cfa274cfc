#!/usr/bin/env bash
# The one test command for a fresh machine:  bash tools/test.sh
# Sets up .venv and builds libtaco (tools/setup.sh), runs the host C tests (ctest), installs
# the package with `pip install .` and the benchmark harness with `pip install ./bench/python`,
# then runs the Python tests: tests/python and tests/gpu. Without a GPU the GPU tests are deselected
# (-m "not gpu"); with one, everything runs. Exits non-zero on any failure, and when pytest
# collects no test at all.
# Extra arguments go to pytest, e.g. bash tools/test.sh -k reference; TACO_CTEST_ARGS to ctest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

say "host tests (ctest)"
ctest --test-dir "$BUILD_DIR" --output-on-failure --parallel "$JOBS" --timeout 900 ${TACO_CTEST_ARGS:-}

# The Python tests run against what users get: the package installed by `pip install .`
# (scikit-build-core; --no-build-isolation reuses the venv's scikit-build-core and NCCL
# headers and keeps its incremental build in build-pip/) and the harness installed by
# `pip install ./bench/python` (pure Python; --no-deps: the library is the one just built).
# TACO_TEST_WHEEL=0 runs them against the CMake build instead (TACO_LIBRARY=build-ci/libtaco.so,
# PYTHONPATH=python:bench/python): faster.
if [ "${TACO_TEST_WHEEL:-1}" != 0 ]; then
  say "pip install . (the wheel: taco/libtaco.so, taco/include/taco.h)"
  wheel_start=$SECONDS
  "$PY" -m pip install --disable-pip-version-check -q --no-build-isolation \
    ${CMAKE_CUDA_ARCHITECTURES:+-C cmake.define.CMAKE_CUDA_ARCHITECTURES="$CMAKE_CUDA_ARCHITECTURES"} "$ROOT"
  echo "pip install took $((SECONDS - wheel_start)) s"
  say "pip install ./bench/python (the benchmark harness: taco_bench)"
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
  say "Python tests (GPU found: GPU tests included)"
else
  say "Python tests (no GPU: -m 'not gpu')"
  MARK=(-m "not gpu")
fi
set +e
"$PY" -m pytest "${PYTEST_DIRS[@]}" "${MARK[@]}" -q -rs "$@"
rc=$?
set -e
if [ $rc -eq 5 ]; then die "pytest collected no tests"; fi
[ $rc -eq 0 ] || die "pytest failed (exit $rc)"
say "all tests passed"
