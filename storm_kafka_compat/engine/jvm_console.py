"""What Spark's JVM prints on stderr, without its start-up chatter.

Starting a SparkContext prints lines an operator can do nothing about: the JVM's
``WARNING: Using incubator modules``, log4j's profile and default-level notice,
the ``setLogLevel`` hint and Hadoop's NativeCodeLoader warning. The JVM (and
the Python workers it forks) inherit the stderr the gateway is launched with;
:func:`filtered_jvm_stderr` hands them a pipe instead, and a thread copies every
line to the real stderr except those. Spark's own warnings and errors pass.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from typing import Iterator

#: start-up lines dropped (unless the CLI runs with -v)
NOISE = re.compile(
    rb"WARNING: Using incubator modules"
    rb"|Using Spark's default log4j profile"
    rb"|Setting default log level to"
    rb"|To adjust logging level use sc\.setLogLevel"
    rb"|NativeCodeLoader: Unable to load native-hadoop library")


def _copy(read_fd: int, write_fd: int) -> None:
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        pending = b""
        while True:
            chunk = pipe.read(65536)
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            out = b"".join(line + b"\n" for line in lines if not NOISE.search(line))
            if out:
                os.write(write_fd, out)
        if pending and not NOISE.search(pending):
            os.write(write_fd, pending)
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
