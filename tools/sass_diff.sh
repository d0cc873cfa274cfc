#!/usr/bin/env bash
# Compares the SASS of two builds of libtaco kernel by kernel: a refactoring of the
# CUDA sources (moving code between files and namespaces, renaming, extracting device
# functions) must leave every kernel's instruction stream unchanged.
#
#   tools/sass_diff.sh OLD NEW
#
# OLD and NEW are each a built file with device code (libtaco.so, or an object such
# as build-dev/CMakeFiles/taco.dir/libtaco/codec/kernels.cu.o) or a git revision,
# which is built for sm_90 (target taco only) in a temporary worktree. Kernels are
# matched by their demangled names without namespaces (so taco::(anonymous
# namespace)::blockCodecKernel<...> matches taco::dev::blockCodecKernel<...>);
# instructions are compared without their addresses, encodings and symbol names.
# Prints one line per kernel that differs or exists on one side only, then a summary;
# exits 0 only when every kernel is identical.
#
# Needs cuobjdump and nvdisasm (the CUDA toolkit's, or: pip install --target DIR
# nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm and put DIR/nvidia/cu13/bin on PATH).
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 OLD NEW   (each a libtaco.so / object file, or a git revision)" >&2
  exit 2
fi
for tool in cuobjdump nvdisasm c++filt python3; do
  command -v "$tool" >/dev/null || { echo "$0: $tool not found on PATH" >&2; exit 2; }
done

# The repository, only when a revision is to be built (two files need no git checkout).
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel 2>/dev/null || true)
work=$(mktemp -d)
trap 'for w in "$work"/wt-*; do [ -d "$w" ] && git -C "$repo" worktree remove --force "$w"; done; rm -rf "$work"' EXIT

# A file as it is, or a revision built into $work.
binary() {
  local what=$1 tag=$2
  if [ -f "$what" ]; then
    echo "$what"
    return
  fi
  local rev
  [ -n "$repo" ] || { echo "$0: $what: not a file, and no git repository to build it from" >&2; exit 2; }
  rev=$(git -C "$repo" rev-parse --verify "$what^{commit}") || { echo "$0: $what: no such file or revision" >&2; exit 2; }
  git -C "$repo" worktree add --detach "$work/wt-$tag" "$rev" >/dev/null 2>&1
  local py=()
  [ -n "${VIRTUAL_ENV:-}" ] && py=(-DPython3_EXECUTABLE="$VIRTUAL_ENV/bin/python")
  cmake -S "$work/wt-$tag" -B "$work/build-$tag" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90 "${py[@]}" >"$work/cmake-$tag.log" 2>&1 ||
    { cat "$work/cmake-$tag.log" >&2; exit 2; }
  cmake --build "$work/build-$tag" --target taco -j "${JOBS:-2}" >"$work/build-$tag.log" 2>&1 ||
    { tail -40 "$work/build-$tag.log" >&2; exit 2; }
  echo "$work/build-$tag/libtaco.so"
}

old=$(binary "$1" old)
new=$(binary "$2" new)
cuobjdump -sass "$old" >"$work/old.sass"
cuobjdump -sass "$new" >"$work/new.sass"

python3 - "$work/old.sass" "$work/new.sass" <<'EOF'
import re, subprocess, sys

def kernels(path):
    """{normalised kernel name: [normalised instructions]} of one cuobjdump -sass listing."""
    out, name = {}, None
    for line in open(path):
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            name = m.group(1)
            out[name] = []
            continue
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;", line)
        if m and name is not None:
            # symbol operands (relocations, internal subroutines) by kind, not by name
            out[name].append(re.sub(r"\$?_Z\w+|\$__internal\w*", "SYM", m.group(1)))
    mangled = list(out)
    demangled = subprocess.run(["c++filt"], input="\n".join(mangled), capture_output=True,
                               text=True, check=True).stdout.split("\n")
    norm = {}
    for mg, dm in zip(mangled, demangled):
        key = re.sub(r"\(anonymous namespace\)::", "", dm)
        key = re.sub(r"\b(?:[A-Za-z_]\w*::)+", "", key)  # every namespace qualifier
        if key in norm:
            sys.exit(f"two kernels normalise to {key}")
        norm[key] = out[mg]
    return norm

old, new = kernels(sys.argv[1]), kernels(sys.argv[2])
same = differ = 0
for k in sorted(set(old) | set(new)):
    if k not in new:
        print(f"only in OLD: {k}")
        differ += 1
    elif k not in old:
        print(f"only in NEW: {k}")
        differ += 1
    elif old[k] != new[k]:
        a, b = old[k], new[k]
        n = sum(x != y for x, y in zip(a, b)) + abs(len(a) - len(b))
        print(f"differs: {k}: {len(a)} vs {len(b)} instructions, {n} positions differ")
        differ += 1
    else:
        same += 1
print(f"{same} kernels identical, {differ} differ or unmatched "
      f"({len(old)} in OLD, {len(new)} in NEW)")
sys.exit(1 if differ else 0)
EOF
