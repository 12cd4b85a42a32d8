"""Stopping a running pipeline by signal.

The first SIGTERM or SIGINT asks the driver loop to stop after the batch in flight
(settled, committed); a second one stops at once: the Spark jobs of the batch in
flight are cancelled and what was acknowledged before is committed
(:meth:`~storm_kafka_compat.engine.driver.Pipeline.force_stop`).

Under ``spark-submit`` the JVM is the Python driver's parent, and the signal may
reach it instead (``kill``, a scheduler) or too (Ctrl-C). While the loop runs, a
SIGTERM to the JVM is handed to this driver as if sent to it. Any other way the
JVM begins to shut down (SIGINT, SIGHUP) runs its shutdown hooks, one of which
stops the SparkContext. :class:`JvmShutdown` is the stop that begins there: a hook
that Spark runs before the SparkContext's asks the loop to stop and waits for the
batch in flight and its commit; a hook that Spark runs after its own ends the JVM
with the Python driver's exit status (0 after a graceful stop), where a JVM ended
by a signal would exit 130 or 129.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Literal, Optional, Protocol

if TYPE_CHECKING:
    from pyspark import SparkContext

log = logging.getLogger("storm_kafka_compat.engine.driver")


class Stoppable(Protocol):
    """What a stop signal reaches: the driver loop's :class:`StopState`
    (:attr:`~storm_kafka_compat.engine.driver.Pipeline.stops`)."""

    #: stop signals this process took (the second stops at once)
    signals_received: int

    @property
    def stopping(self) -> bool: ...

    @property
    def starting(self) -> bool:
        """The run is starting (the first partition refresh, Spark's start): no batch
        has run, so a stop need not wait for anything."""
        ...

    def stop(self, reason: str) -> None: ...

    def force_stop(self) -> None: ...

#: where a run is: "new", then "starting" (the first partition refresh, Spark's start),
#: then "running" (batches)
Phase = Literal["new", "starting", "running"]


class StopState:
    """The driver loop's stop and phase, kept where the signals reach them (a
    :class:`Stoppable`): whether a stop was asked for and why, the stop signals taken,
    the run's :data:`Phase`, and what cancels the batch in flight once batches run."""

    def __init__(self) -> None:
        self._asked = threading.Event()
        #: why the run stops (the summary's "stopped by")
        self.reason = ""
        #: stop signals this process took (the second stops at once)
        self.signals_received = 0
        self.phase: Phase = "new"
        self._cancel: Optional[Callable[[], None]] = None

    def stop(self, reason: str) -> None:
        """Stop after the batch in flight."""
        self.reason = reason
        self._asked.set()

    @property
    def stopping(self) -> bool:
        return self._asked.is_set()

    @property
    def starting(self) -> bool:
        return self.phase == "starting" and not self._asked.is_set()

    def start(self) -> None:
        """The run begins its start-up."""
        self.phase = "starting"

    def running(self, cancel: Callable[[], None]) -> None:
        """Batches run from now on; ``cancel`` cancels the one in flight."""
        self.phase = "running"
        self._cancel = cancel

    def force_stop(self) -> None:
        """Stop now: the batch in flight cancelled (nothing of it acknowledged)."""
        self.reason = self.reason or "forced stop"
        self._asked.set()
        if self.phase == "running" and self._cancel is not None:
            self._cancel()


#: Hadoop's shutdown-hook timeout (``hadoop.service.shutdown.timeout``), which
#: bounds all of Spark's shutdown hooks together unless ``spark.shutdown.timeout``
#: is given to spark-submit
DEFAULT_SHUTDOWN_TIMEOUT_MS = 30_000
#: of that timeout, what is kept for the SparkContext's stop and the exit
SHUTDOWN_MARGIN_MS = 10_000
#: how long the last hook waits for the Python driver's exit status, and the driver
#: for the JVM to end after handing it over
EXIT_HANDOVER_S = 10.0


class StopBeforeStart(BaseException):
    """A stop signal came while the run was starting: the start-up is abandoned at
    once (nothing was read, nothing is committed). A BaseException, as
    KeyboardInterrupt is, so that no ``except Exception`` of a client library on
    the way swallows it."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name


def on_stop_signal(pipeline: Stoppable, name: str) -> None:
    """A stop signal (``name``) reached the driver: the first asks ``pipeline`` to stop
    after the batch in flight, the second stops it at once. While the run is still
    starting there is no batch to wait for: the first signal stops the start-up
    at once (:class:`StopBeforeStart`).

    Only signals count towards the second, not a stop asked for otherwise: a Ctrl-C
    under spark-submit reaches the JVM (:class:`JvmShutdown`) and this process
    together, and is one request."""
    pipeline.signals_received += 1
    if pipeline.starting:
        log.warning("%s received during start-up: stopping now (no batch has run; nothing "
                    "to commit)", name)
        pipeline.stop(name)
        raise StopBeforeStart(name)
    if pipeline.signals_received == 1:
        if pipeline.stopping:
            log.warning("%s received; already stopping after the batch in flight (a "
                        "second signal stops at once)", name)
            return
        log.warning("%s received: finishing the batch in flight, committing, stopping "
                    "(a second signal stops at once)", name)
        pipeline.stop(name)
        return
    log.warning("%s received again: cancelling the batch in flight; committing what "
                "is acknowledged and exiting (the rest is fetched again at the next "
                "start)", name)
    pipeline.force_stop()


def install_stop_handlers(pipeline: Stoppable) -> Callable[[], None]:
    """Handle SIGTERM and SIGINT for ``pipeline`` (:func:`on_stop_signal`); return what
    restores the previous handlers (a no-op outside the main thread, where Python
    cannot take signals)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = {}

    def handler(signum: int, frame: Any) -> None:
        on_stop_signal(pipeline, signal.Signals(signum).name)

    for sig in (signal.SIGTERM, signal.SIGINT):
        previous[sig] = signal.signal(sig, handler)

    def restore() -> None:
        for sig, h in previous.items():
            signal.signal(sig, h)
    return restore


def stop_at_once_handlers() -> Callable[[], None]:
    """Until the returned function is called (it may be called again), SIGTERM and
    SIGINT raise :class:`StopBeforeStart`: a command that has started nothing yet
    (loading the CONFIG, importing the bolts) stops at once. The pipeline's own
    handlers replace these while it runs. A no-op outside the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        log.warning("%s received during start-up: stopping now (no batch has run; nothing "
                    "to commit)", name)
        raise StopBeforeStart(name)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}

    def restore() -> None:
        while previous:
            sig, h = previous.popitem()
            signal.signal(sig, h)
    return restore


def batch_wait_s(shutdown_timeout_ms: Optional[int]) -> float:
    """How long the JVM's first hook waits for the batch in flight: the shutdown
    timeout (``spark.shutdown.timeout``, else Hadoop's 30 s) less
    :data:`SHUTDOWN_MARGIN_MS`, at least 1 s."""
    total = DEFAULT_SHUTDOWN_TIMEOUT_MS if shutdown_timeout_ms is None else shutdown_timeout_ms
    return max(1.0, (total - SHUTDOWN_MARGIN_MS) / 1000.0)


class JvmShutdown:
    """A stop that began in spark-submit's JVM: what its two shutdown hooks do, and
    what the Python driver hands them.

    Parameters
    ----------
    pipeline
        What :meth:`on_shutdown` stops (``stop(reason)``, ``stopping``).
    wait_s
        How long :meth:`on_shutdown` waits for the loop to end (:func:`batch_wait_s`).
    handover_s
        How long :meth:`exit_status` waits for the driver's exit status.
    """

    def __init__(self, pipeline: Stoppable, wait_s: float,
                 handover_s: float = EXIT_HANDOVER_S) -> None:
        self._pipeline = pipeline
        self.wait_s = wait_s
        self.handover_s = handover_s
        self._requested = threading.Event()
        self._loop_ended = threading.Event()
        self._status_known = threading.Event()
        self._status: Optional[int] = None

    @property
    def requested(self) -> bool:
        """The JVM began shutting down while the loop ran."""
        return self._requested.is_set()

    def on_shutdown(self) -> bool:
        """The first hook (before the SparkContext stops): ask the loop to stop after
        the batch in flight and wait for it and its commit; False when the wait ran
        out (Spark then stops under the batch; what was acknowledged is committed)."""
        self._requested.set()
        if self._loop_ended.is_set():
            return True
        if self._pipeline.stopping:
            log.warning("spark-submit is shutting down: waiting up to %.0f s for the batch "
                        "in flight and its commit", self.wait_s)
        else:
            log.warning("spark-submit is shutting down (SIGTERM or Ctrl-C): finishing the "
                        "batch in flight, committing, stopping (waiting up to %.0f s)",
                        self.wait_s)
            self._pipeline.stop("spark-submit shutting down")
        if self._loop_ended.wait(self.wait_s):
            return True
        log.error("the batch in flight did not finish within %.0f s (spark.shutdown.timeout "
                  "less %d s): Spark stops under it; what is acknowledged is committed and "
                  "the rest is fetched again at the next start", self.wait_s,
                  SHUTDOWN_MARGIN_MS // 1000)
        return False

    def loop_ended(self) -> None:
        """The driver loop ended and made its final commit."""
        self._loop_ended.set()

    def exit_status(self) -> Optional[int]:
        """The last hook (after Spark's own): the Python driver's exit status, None if
        it was not handed over in time (the JVM then exits as the signal has it)."""
        if self._status_known.wait(self.handover_s):
            return self._status
        return None

    def hand_over(self, status: int) -> None:
        """The Python driver is done with ``status``; the last hook may end the JVM."""
        self._status = status
        self._status_known.set()


#: the JvmShutdown of the loop running under spark-submit, if any (signals are
#: per process, and so is the JVM)
_current: Optional[JvmShutdown] = None


def watch_jvm_shutdown(shutdown: Optional[JvmShutdown]) -> None:
    """Make ``shutdown`` the one :func:`exit_via_jvm` hands the exit status to."""
    global _current
    _current = shutdown


def exit_via_jvm(status: int, *, parent_pid: Optional[int] = None,
                 sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
    """At the Python driver's exit: when the JVM is shutting down, hand it ``status``
    and wait (up to :data:`EXIT_HANDOVER_S`) for it to end; before it does, this
    process's output still reaches spark-submit's. Otherwise nothing."""
    shutdown = _current
    if shutdown is None or not shutdown.requested:
        return
    parent = os.getppid() if parent_pid is None else parent_pid
    shutdown.hand_over(status)
    deadline = clock() + shutdown.handover_s
    while os.getppid() == parent and clock() < deadline:
        sleep(0.05)


def take_stop_signals(pipeline: Stoppable, spark_context: Optional["SparkContext"]
                      ) -> Callable[[], None]:
    """Once Spark runs: take SIGTERM and SIGINT back from the SparkContext (it installs
    its own SIGINT handler; the handlers first installed are still the ones restored)
    and, under spark-submit, hook the JVM's shutdown (:func:`install_jvm_stop_hook`).
    Returns what the loop calls once it has ended; without Spark, a no-op."""
    if spark_context is None:
        return _nothing
    install_stop_handlers(pipeline)
    return install_jvm_stop_hook(pipeline, spark_context)


def _nothing() -> None:
    """Nothing to undo."""


def install_jvm_stop_hook(pipeline: Stoppable, spark_context: "SparkContext"
                          ) -> Callable[[], None]:
    """Bring a stop that reaches Spark's JVM to ``pipeline``; return what the loop calls
    once it has ended and committed.

    Under spark-submit: a :class:`JvmShutdown` hooked into the JVM's shutdown (the
    hooks are taken out again at the end unless the JVM is already shutting down),
    and a SIGTERM to the JVM handed to this driver. When ``run`` started the JVM
    itself (in a session of its own, so that a signal to the driver's process group
    does not reach it: engine.spark.get_spark): a SIGTERM sent to the JVM alone is
    handed to this driver too, which then finishes the batch and commits. Spark
    Connect has no JVM here: a no-op."""
    from storm_kafka_compat.engine import spark as spark_adapter
    if getattr(spark_context, "_gateway", None) is None:
        return lambda: None
    if not spark_adapter.under_spark_submit():
        restore = _hand_jvm_sigterm(pipeline, spark_context, "SIGTERM to Spark's JVM")

        def put_back() -> None:
            _put_back(restore)
        return put_back
    try:
        shutdown = JvmShutdown(pipeline,
                               batch_wait_s(spark_adapter.shutdown_timeout_ms(spark_context)))

        def last() -> None:
            status = shutdown.exit_status()
            if status is not None:
                spark_adapter.halt_jvm(spark_context, status)

        remove = spark_adapter.add_shutdown_hooks(spark_context, shutdown.on_shutdown, last)
    except Exception as exc:  # noqa: BLE001 - the job runs; only this way of stopping is lost
        log.warning("no shutdown hook in spark-submit's JVM (%s): a signal to spark-submit "
                    "will stop the SparkContext under the batch in flight (it is replayed); "
                    "send SIGTERM to the driver pid %d instead", exc, os.getpid())
        return lambda: None
    watch_jvm_shutdown(shutdown)
    # a SIGTERM to the JVM is then a signal to this driver, like a SIGTERM to its pid
    # (a second one stops at once); the hooks still serve SIGINT and SIGHUP
    restore_term = _hand_jvm_sigterm(pipeline, spark_context, "SIGTERM to spark-submit")

    def ended() -> None:
        shutdown.loop_ended()
        _put_back(restore_term)
        try:
            if not shutdown.requested:
                watch_jvm_shutdown(None)
                remove()
        except Exception:  # noqa: BLE001 - the JVM is going away; the hooks with it
            log.debug("the JVM's shutdown hooks could not be taken out", exc_info=True)
    return ended


def _hand_jvm_sigterm(pipeline: Stoppable, spark_context: "SparkContext",
                      name: str) -> Optional[Callable[[], None]]:
    """Have a SIGTERM to the JVM call :func:`on_stop_signal` for ``pipeline``; return
    what gives the JVM its own handler back (None when it could not be installed)."""
    from storm_kafka_compat.engine import spark as spark_adapter
    try:
        restore: Callable[[], None] = spark_adapter.handle_jvm_signal(
            spark_context, "TERM", lambda: on_stop_signal(pipeline, name))
        return restore
    except Exception:  # noqa: BLE001 - the JVM then shuts down on SIGTERM, as by default
        log.debug("no SIGTERM handler in Spark's JVM", exc_info=True)
        return None


def _put_back(restore: Optional[Callable[[], None]]) -> None:
    if restore is None:
        return
    try:
        restore()
    except Exception:  # noqa: BLE001 - the JVM is going away; its handler with it
        log.debug("the JVM's SIGTERM handler could not be put back", exc_info=True)
