"""What Spark's JVM prints on stderr, without its start-up chatter.

Starting a SparkContext prints lines an operator can do nothing about: the JVM's
``WARNING: Using incubator modules``, log4j's profile and default-level notice,
the ``setLogLevel`` hint and Hadoop's NativeCodeLoader warning. The JVM (and
the Python workers it forks) inherit the stderr the gateway is launched with;
:func:`filtered_jvm_stderr` hands them a pipe instead, and a thread copies every
line to the real stderr except those. Spark's own warnings and errors pass, but
not their stack traces: a crashed Python worker printed about 48 lines of Java
and Python frames for one failed task, which the driver reports in its own words
anyway; each hidden trace leaves one line saying so (``-v`` shows them all).
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from typing import Iterator, Optional

#: start-up lines dropped (unless the CLI runs with -v)
NOISE = re.compile(
    rb"WARNING: Using incubator modules"
    rb"|Using Spark's default log4j profile"
    rb"|Setting default log level to"
    rb"|To adjust logging level use sc\.setLogLevel"
    rb"|NativeCodeLoader: Unable to load native-hadoop library")


#: a frame of a Java stack trace, or its "... 12 more"
JAVA_FRAME = re.compile(rb"^\s+(at \S+\(.*\)|\.\.\. \d+ (more|common frames omitted))\s*$")
#: a frame of a Python traceback inside a Spark error ("  File "...", line 3, in f")
PYTHON_FRAME = re.compile(rb'^\s+File ".*", line \d+, in \S+\s*$')
#: the line left where a stack trace was hidden
HIDDEN = b"    (stack trace hidden; run with -v to see it)\n"


class StackFilter:
    """Drops the start-up noise and the frames of stack traces, line by line: a
    Python frame's source line (the next line, indented deeper) goes with it, and
    each run of hidden frames leaves :data:`HIDDEN` once."""

    def __init__(self) -> None:
        self._hiding = False
        self._source_after: Optional[int] = None   # indent of the last Python frame

    def __call__(self, line: bytes) -> bytes:
        if NOISE.search(line):
            return b""
        indent = len(line) - len(line.lstrip())
        if self._source_after is not None:
            after, self._source_after = self._source_after, None
            if indent > after and line.strip():
                return b""                         # the frame's source line
        frame = JAVA_FRAME.match(line) is not None
        if PYTHON_FRAME.match(line):
            frame = True
            self._source_after = indent
        if frame:
            first = not self._hiding
            self._hiding = True
            return HIDDEN if first else b""
        self._hiding = False
        return line + b"\n"


def _copy(read_fd: int, write_fd: int) -> None:
    keep = StackFilter()
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        pending = b""
        while True:
            chunk = pipe.read(65536)
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            out = b"".join(keep(line) for line in lines)
            if out:
                os.write(write_fd, out)
        if pending:
            out = keep(pending)
            if out:
                os.write(write_fd, out.rstrip(b"\n"))
    os.close(write_fd)


@contextlib.contextmanager
def filtered_jvm_stderr(enabled: bool = True) -> Iterator[None]:
    """While the block runs, processes started from it write stderr through the
    filter (the JVM keeps it for its whole life); this process's own stderr is
    restored when the block ends."""
    if not enabled:
        yield
        return
    read_fd, write_fd = os.pipe()
    target = os.dup(2)          # where the filtered lines go, for as long as the JVM lives
    saved = os.dup(2)
    os.dup2(write_fd, 2)
    os.close(write_fd)
    threading.Thread(target=_copy, args=(read_fd, target), name="jvm-stderr",
                     daemon=True).start()
    try:
        yield
    finally:
        os.dup2(saved, 2)       # the pipe's write end now lives in the JVM only
        os.close(saved)
