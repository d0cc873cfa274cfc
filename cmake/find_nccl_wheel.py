"""Print the include directories of the NCCL Python wheels installed for this
interpreter, best first: nvidia-nccl-cu13, then nvidia-nccl-cu12, then any
nvidia/nccl/include under site-packages. Used by CMakeLists.txt to find nccl.h."""
import os
import site
import sys
import sysconfig

found = []


def add(d):
    d = os.path.normpath(str(d))
    if d not in found and os.path.isfile(os.path.join(d, "nccl.h")):
        found.append(d)


try:
    from importlib import metadata
except ImportError:  # Python < 3.8
    metadata = None

if metadata is not None:
    for dist_name in ("nvidia-nccl-cu13", "nvidia-nccl-cu12"):
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError:
            continue
        for f in dist.files or ():
            if str(f).replace("\\", "/").endswith("include/nccl.h"):
                add(os.path.dirname(str(dist.locate_file(f))))

roots = [sysconfig.get_paths().get(k) for k in ("purelib", "platlib")]
try:
    roots += site.getsitepackages()
except AttributeError:  # old virtualenv
    pass
roots += [p for p in sys.path if p.endswith("site-packages")]
for root in roots:
    if root:
        add(os.path.join(root, "nvidia", "nccl", "include"))

print("\n".join(found))
