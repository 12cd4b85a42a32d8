"""Python's cyclic garbage collector held off around the executor's hot loops."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def collection_paused() -> Iterator[None]:
    """Python's cyclic garbage collector held off while a task processes its plan (at
    most its time budget): the loop makes two objects a message (the tuple and its
    values), and collections triggered by them scanned the worker's whole heap again
    and again, about a third of a task's CPU time (profiled). Reference counting still
    frees everything at once; what a bolt leaves in reference cycles is collected when
    the task ends and the collector runs again. The staged path holds it off the same
    way around a partition's spout stage and a bolt host's stage (in a word count the
    collections cost about 15 % of both: unpickled and emitted tuples are containers)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
