"""The harness's command-line conventions, shared by its commands.

A bad value on the command line is one line on stderr, "PROG: error: argument --X: why",
and exit status 2 (argparse's), before any work starts: the argument types below check
values as they are parsed, and cross-option checks raise UsageError. A library error
(TacoError) or a file error during the run is one line and exit status 1; --debug, or
TACO_DEBUG set (the library's log level), shows the traceback instead.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from typing import Callable, Iterable

EXAMPLES = "e.g. 2^28, 1<<20, 256M, 64K"


class UsageError(SystemExit):
    """A bad command-line value: a SystemExit with argparse's status 2 whose text is the
    message (so callers of a command's main() can read it)."""

    def __init__(self, message: str):
        super().__init__(2)
        self.message = message

    def __str__(self) -> str:
        return self.message


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are UsageError (printed as one line by run_command),
    not argparse's usage block and message."""

    def error(self, message: str):
        raise UsageError(message)


def run_command(parser: argparse.ArgumentParser, run: Callable[[argparse.Namespace], int],
                argv: list[str] | None) -> int:
    """Parses `argv` and runs `run(args)`; bad input and run-time library errors are one line
    on stderr (module docstring)."""
    args = None
    try:
        args = parser.parse_args(argv)
        return run(args)
    except UsageError as e:
        print(f"{parser.prog}: error: {e}", file=sys.stderr)
        raise
    except BrokenPipeError:  # the reader of stdout went away: the CLI ends quietly (status 141)
        raise
    except MemoryError as e:  # numpy's "Unable to allocate ..." (the library's own is a TacoError too)
        if debugging(args):
            raise
        print(f"{parser.prog}: error: out of memory: {e or 'an allocation failed'} (--debug shows the traceback)",
              file=sys.stderr)
        return 1
    except Exception as e:
        from taco.errors import TacoError

        # the library's errors, a file that cannot be read or written, a missing optional package
        if not isinstance(e, (TacoError, OSError, ImportError)) or debugging(args):
            raise
        print(f"{parser.prog}: error: {e} (--debug shows the traceback)", file=sys.stderr)
        return 1


def debugging(args: argparse.Namespace | None) -> bool:
    return bool(getattr(args, "debug", False) or os.environ.get("TACO_DEBUG"))


def add_common(p: argparse.ArgumentParser, quiet: bool = True) -> None:
    """--debug, and --quiet where the command has nothing else by that name."""
    if quiet:
        p.add_argument("--quiet", action="store_true", help="no progress line on stderr (shown only on a terminal)")
    p.add_argument("--debug", action="store_true",
                   help="show the traceback of a library error (also with TACO_DEBUG set)")


# ------------------------------------------------------------------ argument types


def parse_count(s: str) -> int:
    """'268435456', '2^28', '1<<28', '256M', '64K'."""
    t = s.strip().replace(" ", "")
    if "^" in t:
        b, e = t.split("^")
        v = int(b) ** int(e)
        if not isinstance(v, int):  # a negative exponent
            raise ValueError(f"{s!r} is not an integer")
        return v
    if "<<" in t:
        b, e = t.split("<<")
        return int(b) << int(e)
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    if t and t[-1].lower() in mult:
        return int(t[:-1]) * mult[t[-1].lower()]
    return int(t)


def count(minimum: int = 1, maximum: int | None = None) -> Callable[[str], int]:
    """An argument type: a count or size (parse_count's forms), in [minimum, maximum]."""
    def convert(s: str) -> int:
        try:
            v = parse_count(s)
        except (ValueError, OverflowError):
            raise argparse.ArgumentTypeError(f"not a count: {s!r} ({EXAMPLES})") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {s!r}")
        if maximum is not None and v > maximum:
            raise argparse.ArgumentTypeError(f"must be <= {maximum}, got {s!r} = {v}")
        return v
    return convert


def available_host_memory() -> int | None:
    """Bytes of host memory available to a new allocation (Linux's MemAvailable), or None."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def check_fits(option: str, value: str, need: int, have: int | None, where: str) -> None:
    """UsageError naming `option` when a run needs `need` bytes of `where` memory and only `have`
    (None: unknown, not checked) are available."""
    if have is not None and need > have:
        raise UsageError(f"argument {option}: {value} needs about {need / 2**30:.1f} GiB of {where} memory, "
                         f"{have / 2**30:.1f} GiB are available")


def integer(minimum: int | None = None) -> Callable[[str], int]:
    """An argument type: an integer, at least `minimum`."""
    def convert(s: str) -> int:
        try:
            v = int(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {s!r}") from None
        if minimum is not None and v < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {s!r}")
        return v
    return convert


def real(minimum: float = 0.0, strict: bool = False) -> Callable[[str], float]:
    """An argument type: a finite number, >= `minimum` (> with `strict`)."""
    def convert(s: str) -> float:
        try:
            v = float(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {s!r}") from None
        if not math.isfinite(v) or v < minimum or (strict and v == minimum):
            raise argparse.ArgumentTypeError(f"must be a finite number {'>' if strict else '>='} {minimum:g}, "
                                             f"got {s!r}")
        return v
    return convert


def _items(s: str) -> list[str]:
    items = [v.strip() for v in s.split(",")]
    if not s.strip() or any(not v for v in items):
        raise argparse.ArgumentTypeError(f"not a comma-separated list: {s!r}")
    return items


def integers(minimum: int | None = None) -> Callable[[str], list[int]]:
    """An argument type: a comma list of integers, each at least `minimum`."""
    one = integer(minimum)

    def convert(s: str) -> list[int]:
        return [one(v) for v in _items(s)]
    return convert


def choice(choices: Iterable[str], what: str = "value") -> Callable[[str], str]:
    """An argument type: one of `choices` (argparse's own choices= words its error differently
    from one Python version to the next)."""
    choices = list(choices)

    def convert(s: str) -> str:
        if s not in choices:
            raise argparse.ArgumentTypeError(f"unknown {what} {s!r} (choose from {', '.join(choices)})")
        return s
    return convert


def one_of(choices: Iterable[str], what: str = "value") -> Callable[[str], list[str]]:
    """An argument type: a comma list of `choices` (the first unknown item is named in the error)."""
    one = choice(choices, what)

    def convert(s: str) -> list[str]:
        return [one(v) for v in _items(s)]
    return convert


def library_detail(e: Exception) -> str:
    """A library error's message without the function or argument it names and the spec it
    quotes: "unknown codec 'x' (...)"."""
    msg = getattr(e, "message", str(e))
    msg = re.sub(r"^\w+: ", "", msg)  # "tacoCodecFind: ...", "codec: ..."
    return re.sub(r"^(spec argument )?'[^']*': ", "", msg)


def codec_specs(s: str) -> list[str]:
    """An argument type: a comma list of codec specs (name[:block=N]) the library knows."""
    import taco

    specs = _items(s)
    for spec in specs:
        try:
            taco.codec_info(spec)
        except taco.TacoError as e:
            detail = library_detail(e)
            raise argparse.ArgumentTypeError(detail if repr(spec) in detail else f"{spec!r}: {detail}") from None
    return specs


def existing_file(s: str) -> str:
    if not os.path.isfile(s):
        raise argparse.ArgumentTypeError(f"no such file: {s!r}")
    return s


def existing_dir(s: str) -> str:
    if not os.path.isdir(s):
        raise argparse.ArgumentTypeError(f"no such directory: {s!r}")
    return s
