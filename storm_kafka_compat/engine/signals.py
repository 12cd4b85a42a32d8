"""Stopping a running pipeline by signal.

The first SIGTERM or SIGINT asks the driver loop to stop after the batch in flight
(settled, committed); a second one stops at once: the Spark jobs of the batch in
flight are cancelled and what was acknowledged before is committed
(:meth:`~storm_kafka_compat.engine.driver.Pipeline.force_stop`).
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any, Callable

log = logging.getLogger("storm_kafka_compat.engine.driver")


def install_stop_handlers(pipeline: Any) -> Callable[[], None]:
    """Handle SIGTERM and SIGINT for ``pipeline``; return what restores the previous
    handlers (a no-op outside the main thread, where Python cannot take signals)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = {}

    def handler(signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if not pipeline.stopping:
            log.warning("%s received: finishing the batch in flight, committing, stopping "
                        "(a second signal stops at once)", name)
            pipeline.stop(name)
            return
        log.warning("%s received again: cancelling the batch in flight; committing what "
                    "is acknowledged and exiting (the rest is fetched again at the next "
                    "start)", name)
        pipeline.force_stop()

    for sig in (signal.SIGTERM, signal.SIGINT):
        previous[sig] = signal.signal(sig, handler)

    def restore() -> None:
        for sig, h in previous.items():
            signal.signal(sig, h)
    return restore
