#!/usr/bin/env bash
# A second compiler over the host code: every libtaco/**/*.cc and tests/host/*.{cc,c} is
# compiled with clang++ / clang, with the flags and include paths of the build
# (BUILD_DIR/compile_commands.json) plus -Werror, checks only (-fsyntax-only), so that a missing
# include or a GCC-only construct fails here, not on a user's machine. Host code only: nvcc
# compiles the .cu files with the system's g++.
#   tools/clang_check.sh BUILD_DIR
# Environment: CLANGXX (default clang++), CLANG (default clang), TACO_JOBS (default 2), PYTHON.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${1:?usage: $0 BUILD_DIR}"
[ -f "$BUILD_DIR/compile_commands.json" ] ||
  { echo "$0: no $BUILD_DIR/compile_commands.json: configure the build first" >&2; exit 2; }
exec "${PYTHON:-python3}" - "$ROOT" "$BUILD_DIR/compile_commands.json" <<'PYEOF'
import concurrent.futures, json, os, shlex, subprocess, sys

root, db = sys.argv[1], sys.argv[2]
cxx, cc = os.environ.get("CLANGXX", "clang++"), os.environ.get("CLANG", "clang")
jobs = int(os.environ.get("TACO_JOBS", "2"))
mine = (os.path.join(root, "libtaco") + os.sep, os.path.join(root, "tests", "host") + os.sep)

def clang_command(entry):
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    if os.path.basename(args[0]) == "ccache":
        args = args[1:]
    out, skip = [cc if entry["file"].endswith(".c") else cxx], False
    for a in args[1:]:
        if skip:
            skip = False
        elif a == "-o":
            skip = True
        elif a != "-c" and a != entry["file"]:
            out.append(a)
    return out + ["-fsyntax-only", "-Werror", entry["file"]]

entries = [e for e in json.load(open(db))
           if e["file"].endswith((".cc", ".c")) and e["file"].startswith(mine)]
if not entries:
    sys.exit(f"clang_check: no host sources of libtaco in {db}")

def run(entry):
    p = subprocess.run(clang_command(entry), cwd=entry["directory"], capture_output=True, text=True)
    return entry["file"], p.returncode, p.stdout + p.stderr

failed = 0
with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
    for path, rc, text in pool.map(run, entries):
        if rc:
            failed += 1
            print(f"clang: {os.path.relpath(path, root)} failed:\n{text}", file=sys.stderr)
version = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
print(f"clang: {len(entries) - failed} of {len(entries)} host files compile without a warning ({version})")
sys.exit(1 if failed else 0)
PYEOF
