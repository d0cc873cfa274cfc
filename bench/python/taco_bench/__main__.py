"""python -m taco_bench: see taco_bench.cli."""

import sys

from .cli import main

sys.exit(main())
