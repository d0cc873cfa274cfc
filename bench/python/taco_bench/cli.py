"""python -m taco_bench codec|coll|accuracy|train: each command is its module's main();
a module is imported only when its command runs (train and coll need torch, accuracy's
real model needs torch and the model package)."""

from __future__ import annotations

import argparse
import importlib
import sys

from . import __doc__ as _DOC
from . import options

# command -> (module, one-line help)
COMMANDS = {
    "codec": ("taco_bench.codec", "codec speed vs memcpy and accuracy"),
    "coll": ("taco_bench.coll", "collectives vs the plain collective and a DIY FP8 baseline"),
    "accuracy": ("taco_bench.accuracy", "codec error on real tensor-parallel partial sums (CPU)"),
    "train": ("taco_bench.train.cli", "tensor-parallel training benchmark of the codecs (torch)"),
}


def main(argv: list[str] | None = None, prog: str = "python -m taco_bench") -> int:
    """Runs `argv[0]`'s command with the rest of `argv`; `prog` names the command line in
    help and errors (python -m taco passes its own)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in COMMANDS:
        module = importlib.import_module(COMMANDS[argv[0]][0])
        return module.main(argv[1:], prog=f"{prog} {argv[0]}")
    parser = options.Parser(prog=prog, description=_DOC, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", title="commands")
    for name, (_, what) in COMMANDS.items():
        sub.add_parser(name, help=what + " (see --help)")

    def no_command(args: argparse.Namespace) -> int:  # a command would have been dispatched above
        raise options.UsageError(f"choose a command: {', '.join(COMMANDS)}")
    return options.run_command(parser, no_command, argv)
