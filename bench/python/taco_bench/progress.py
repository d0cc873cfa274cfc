"""A progress line for long harness work: "accuracy: 12/144 tensors (L2.qkv P=4 bf16), 18 s,
about 40 s left", on stderr, rewritten in place with a carriage return.

It is drawn only while stderr is a terminal: in a log, a pipe or CI the output stays what it
was, with no control characters; --quiet turns it off on a terminal too. Anything the command
prints while the line is up goes through Progress.print, which clears the line first so the
two never share a row. No dependency (tqdm, rich): the harness runs where neither is installed.
"""

from __future__ import annotations

import shutil
import sys
import time
from typing import Callable, Iterable, Iterator, TextIO, TypeVar

T = TypeVar("T")


def is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class Progress:
    """`done` of `total` `unit`, the elapsed time and an estimate of the time left. `total`
    may be set later (None: only the note and the elapsed time are shown). A context manager:
    the line is cleared on the way out, error or not."""

    def __init__(self, what: str, total: int | None = None, unit: str = "", *, quiet: bool = False,
                 stream: TextIO | None = None, interval: float = 0.2):
        self.stream = sys.stderr if stream is None else stream
        self.shown = not quiet and is_terminal(self.stream)
        self.what, self.total, self.unit = what, total, unit
        self.done = 0
        self.note = ""
        self.interval = interval  # seconds between redraws: a fast loop does not flood the terminal
        self._t0 = time.monotonic()
        self._drawn_at: float | None = None
        self._width = 0  # characters of the line now on screen

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.clear()

    def step(self, n: int = 1, note: str | None = None) -> None:
        """`n` more units done; `note` says what is running now."""
        self.done += n
        self.update(note)

    def each(self, items: Iterable[T], note: Callable[[T], str] | None = None) -> Iterator[T]:
        """`items`, one step counted as each one's loop body ends (`continue` included);
        note(item) says which is running."""
        for item in items:
            self.update(note(item) if note else None)
            yield item
            self.step()

    def update(self, note: str | None = None) -> None:
        if note is not None:
            self.note = note
        if not self.shown:
            return
        now = time.monotonic()
        finished = self.total is not None and self.done >= self.total
        if self._drawn_at is not None and now - self._drawn_at < self.interval and not finished:
            return
        self._draw(now)

    def text(self, now: float | None = None) -> str:
        elapsed = (time.monotonic() if now is None else now) - self._t0
        parts = []
        if self.total is not None:
            parts.append(f"{self.done}/{self.total} {self.unit}".rstrip())
        if self.note:
            parts.append(f"({self.note})" if parts else self.note)
        line = f"{self.what}: {' '.join(parts)}, {elapsed:.0f} s" if parts else f"{self.what}: {elapsed:.0f} s"
        if self.total and 0 < self.done < self.total:
            line += f", about {elapsed / self.done * (self.total - self.done):.0f} s left"
        return line

    def _draw(self, now: float) -> None:
        # one row: a line longer than the terminal wraps, and \r returns only to the last row
        line = self.text(now)[:max(20, shutil.get_terminal_size().columns - 1)]
        self.stream.write("\r" + line + " " * max(0, self._width - len(line)))
        self.stream.flush()
        self._width, self._drawn_at = len(line), now

    def clear(self) -> None:
        """Erases the line (it comes back at the next step)."""
        if self.shown and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
        self._width, self._drawn_at = 0, None

    def print(self, *args, **kwargs) -> None:
        """print(), with the line cleared first and drawn again after."""
        was_up = self._width > 0
        self.clear()
        kwargs.setdefault("flush", True)
        print(*args, **kwargs)
        if was_up:
            self._draw(time.monotonic())
