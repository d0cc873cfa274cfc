import os
import sys

from .cli import main


def _cli() -> int:
    """main(), ending quietly (status 141, 128 + SIGPIPE) when the reader of stdout goes away, as
    `python -m taco` does."""
    try:
        rc = main()
        sys.stdout.flush()
        return rc
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


sys.exit(_cli())
