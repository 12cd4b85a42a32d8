"""One renderer for every command: a table, or one JSON document on stdout."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Iterable, List, Mapping, Optional, Sequence, TextIO


def cell(value: Any) -> str:
    """Table text of a value; a missing value is ``-`` as in kafka-consumer-groups."""
    if value is None or value == "":
        return "-"
    return str(value)


def write(text: str, out: Optional[TextIO] = None) -> None:
    """Write ``text`` to ``out`` (stdout by default) and flush it. A reader that went
    away (``run ... | tee log`` and a Ctrl-C that ended ``tee`` too; ``... | head``)
    turns the stream into /dev/null instead of an error: what the command did is
    done, and its exit code says how it went, not whether someone read it."""
    out = out or sys.stdout
    try:
        out.write(text)
        out.flush()
    except BrokenPipeError:
        discard(out)


def discard(out: TextIO) -> None:
    """From now on ``out`` writes to /dev/null (its file descriptor is replaced, so
    Python's flush at exit does not fail either)."""
    try:
        fd = out.fileno()
    except (OSError, ValueError):     # not a real file (a test's capture)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def table(rows: Iterable[Mapping[str, Any]], columns: Sequence[str],
          out: Optional[TextIO] = None) -> None:
    """Print ``rows`` as a left-aligned table with the given column names."""
    data: List[List[str]] = [[cell(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in data]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in data]
    write("".join(line + "\n" for line in lines), out)


def as_json(value: Any, out: Optional[TextIO] = None) -> None:
    """Print one JSON document."""
    write(json.dumps(value, indent=None, separators=(",", ":"), default=str) + "\n", out)


def err(message: str) -> None:
    """A diagnostic line on stderr."""
    write(message + "\n", sys.stderr)
