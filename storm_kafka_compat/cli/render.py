"""One renderer for every command: a table, or one JSON document on stdout."""

from __future__ import annotations

import json
import sys
from typing import Any, Iterable, List, Mapping, Optional, Sequence, TextIO


def cell(value: Any) -> str:
    """Table text of a value; a missing value is ``-`` as in kafka-consumer-groups."""
    if value is None or value == "":
        return "-"
    return str(value)


def table(rows: Iterable[Mapping[str, Any]], columns: Sequence[str],
          out: Optional[TextIO] = None) -> None:
    """Print ``rows`` as a left-aligned table with the given column names."""
    out = out or sys.stdout
    data: List[List[str]] = [[cell(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in data]) for i, c in enumerate(columns)]
    out.write("  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip() + "\n")
    for row in data:
        out.write("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() + "\n")


def as_json(value: Any, out: Optional[TextIO] = None) -> None:
    """Print one JSON document."""
    out = out or sys.stdout
    out.write(json.dumps(value, indent=None, separators=(",", ":"), default=str) + "\n")


def err(message: str) -> None:
    """A diagnostic line on stderr."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
