"""Stopping by signal, and the stop that begins in spark-submit's JVM
(engine.signals): the pure coordination, without Spark."""

from __future__ import annotations

import os
import signal
import threading
from typing import List

import pytest

from storm_kafka_compat.engine import signals
from storm_kafka_compat.engine.signals import (
    JvmShutdown,
    batch_wait_s,
    exit_via_jvm,
    install_stop_handlers,
    watch_jvm_shutdown,
)
from storm_kafka_compat.testing.clock import ManualClock


class FakePipeline:
    def __init__(self, stopping: bool = False, starting: bool = False) -> None:
        self.stopping = stopping
        self.starting = starting
        self.signals_received = 0
        self.calls: List[str] = []

    def stop(self, reason: str) -> None:
        self.calls.append(f"stop:{reason}")
        self.stopping = True
        self.starting = False

    def force_stop(self) -> None:
        self.calls.append("force")


@pytest.mark.parametrize("timeout_ms, wait_s", [
    (None, 20.0),          # Hadoop's 30 s, less the 10 s kept for Spark's own hooks
    (60_000, 50.0),        # spark.shutdown.timeout=60s
    (5_000, 1.0),          # never below 1 s
])
def test_the_batch_wait_is_the_shutdown_timeout_less_the_margin(timeout_ms, wait_s) -> None:
    assert batch_wait_s(timeout_ms) == wait_s


def test_the_first_hook_stops_the_loop_and_returns_once_it_has_ended() -> None:
    pipeline = FakePipeline()
    shutdown = JvmShutdown(pipeline, wait_s=5.0)
    timer = threading.Timer(0.05, shutdown.loop_ended)
    timer.start()
    assert shutdown.on_shutdown() is True
    assert pipeline.calls == ["stop:spark-submit shutting down"] and shutdown.requested


def test_the_first_hook_gives_up_after_its_wait(caplog) -> None:
    pipeline = FakePipeline()
    shutdown = JvmShutdown(pipeline, wait_s=0.05)
    assert shutdown.on_shutdown() is False
    assert "did not finish within 0 s" in caplog.text


def test_the_first_hook_does_not_stop_a_loop_already_stopping_or_ended() -> None:
    stopping = FakePipeline(stopping=True)          # a Ctrl-C reached the driver first
    shutdown = JvmShutdown(stopping, wait_s=5.0)
    threading.Timer(0.05, shutdown.loop_ended).start()
    assert shutdown.on_shutdown() is True and stopping.calls == []
    ended = FakePipeline()
    shutdown = JvmShutdown(ended, wait_s=5.0)
    shutdown.loop_ended()
    assert shutdown.on_shutdown() is True and ended.calls == []


def test_the_last_hook_gets_the_exit_status_handed_over_or_none() -> None:
    shutdown = JvmShutdown(FakePipeline(), wait_s=1.0, handover_s=5.0)
    threading.Timer(0.05, shutdown.hand_over, args=(3,)).start()
    assert shutdown.exit_status() == 3
    assert JvmShutdown(FakePipeline(), wait_s=1.0, handover_s=0.05).exit_status() is None


def test_exit_via_jvm_does_nothing_unless_the_jvm_is_shutting_down() -> None:
    clock = ManualClock()
    shutdown = JvmShutdown(FakePipeline(), wait_s=1.0, handover_s=0.01)
    try:
        watch_jvm_shutdown(None)
        exit_via_jvm(0, sleep=clock.sleep, clock=clock)
        watch_jvm_shutdown(shutdown)                # hooked, but no shutdown began
        exit_via_jvm(0, sleep=clock.sleep, clock=clock)
        assert clock.now == 0.0 and shutdown.exit_status() is None
    finally:
        watch_jvm_shutdown(None)


def test_exit_via_jvm_hands_the_status_over_and_waits_for_the_jvm_to_end() -> None:
    clock = ManualClock()
    shutdown = JvmShutdown(FakePipeline(), wait_s=0.01, handover_s=2.0)
    shutdown.loop_ended()
    shutdown.on_shutdown()
    try:
        watch_jvm_shutdown(shutdown)
        # the parent (the JVM) is still there: wait until the hand-over time is up
        exit_via_jvm(1, parent_pid=os.getppid(), sleep=clock.sleep, clock=clock)
        assert shutdown.exit_status() == 1 and clock.now >= 2.0
        # the parent is gone (this process was reparented): no wait
        clock.now = 0.0
        exit_via_jvm(1, parent_pid=-1, sleep=clock.sleep, clock=clock)
        assert clock.now == 0.0
    finally:
        watch_jvm_shutdown(None)


def test_only_signals_to_this_process_count_towards_the_second() -> None:
    # the JVM's hook stopped the loop first (Ctrl-C under spark-submit reaches both):
    # this process's SIGINT is still the first, and only a second one forces
    pipeline = FakePipeline(stopping=True)
    restore = install_stop_handlers(pipeline)
    try:
        os.kill(os.getpid(), signal.SIGINT)
        assert pipeline.calls == []
        os.kill(os.getpid(), signal.SIGTERM)
        assert pipeline.calls == ["force"]
    finally:
        restore()


def test_a_first_signal_stops_and_a_second_forces() -> None:
    pipeline = FakePipeline()
    before = signal.getsignal(signal.SIGTERM)
    restore = install_stop_handlers(pipeline)
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        assert pipeline.calls == ["stop:SIGTERM"]
        os.kill(os.getpid(), signal.SIGTERM)
        assert pipeline.calls == ["stop:SIGTERM", "force"]
    finally:
        restore()
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_signal_during_start_up_stops_at_once_and_a_second_does_not_raise_again(
        caplog) -> None:
    pipeline = FakePipeline(starting=True)
    restore = install_stop_handlers(pipeline)
    try:
        with pytest.raises(signals.StopBeforeStart) as stopped:
            os.kill(os.getpid(), signal.SIGINT)
        assert stopped.value.signal_name == "SIGINT" and pipeline.calls == ["stop:SIGINT"]
        assert "SIGINT received during start-up: stopping now" in caplog.text
        os.kill(os.getpid(), signal.SIGTERM)          # while cleaning up: no second raise
        assert pipeline.calls == ["stop:SIGINT", "force"]
    finally:
        restore()


def test_the_stop_state_through_a_run_start_up_batches_and_two_signals() -> None:
    """The driver's own Stoppable: a signal while starting ends the start-up; once
    batches run the first signal stops after the batch, the second cancels it."""
    cancelled: List[str] = []
    state = signals.StopState()
    assert state.phase == "new" and not state.starting and not state.stopping
    state.start()
    assert state.starting
    with pytest.raises(signals.StopBeforeStart):
        signals.on_stop_signal(state, "SIGINT")
    assert state.stopping and not state.starting and state.reason == "SIGINT"

    state = signals.StopState()
    state.start()
    state.force_stop()                       # nothing runs yet: nothing to cancel
    assert cancelled == [] and state.reason == "forced stop"

    state = signals.StopState()
    state.start()
    state.running(cancel=lambda: cancelled.append("cancel"))
    signals.on_stop_signal(state, "SIGTERM")
    assert state.stopping and state.reason == "SIGTERM" and cancelled == []
    signals.on_stop_signal(state, "SIGTERM")
    assert cancelled == ["cancel"] and state.signals_received == 2
    assert state.reason == "SIGTERM"         # the first reason stands


class FakeJvm:
    """engine.spark's hook functions, recorded (no Spark)."""

    def __init__(self, monkeypatch, fail: bool = False) -> None:
        from storm_kafka_compat.engine import spark as spark_adapter
        self.hooks: List = []
        self.removed = 0
        self.halted: List[int] = []
        self.term_handlers: List = []
        self.term_restored = 0

        def handle(sc, name, action):
            assert name == "TERM"
            self.term_handlers.append(action)

            def restore() -> None:
                self.term_restored += 1
            return restore

        def add(sc, first, last):
            if fail:
                raise RuntimeError("Shutdown hooks cannot be modified during shutdown.")
            self.hooks = [first, last]
            return self._remove

        monkeypatch.setattr(spark_adapter, "under_spark_submit", lambda: True)
        monkeypatch.setattr(spark_adapter, "shutdown_timeout_ms", lambda sc: 11_000)
        monkeypatch.setattr(spark_adapter, "add_shutdown_hooks", add)
        monkeypatch.setattr(spark_adapter, "halt_jvm", lambda sc, s: self.halted.append(s))
        monkeypatch.setattr(spark_adapter, "handle_jvm_signal", handle)

    def _remove(self) -> None:
        self.removed += 1


class FakeContext:
    _gateway = object()


def test_a_loop_that_ends_by_itself_takes_its_hooks_out(monkeypatch) -> None:
    jvm = FakeJvm(monkeypatch)
    ended = signals.install_jvm_stop_hook(FakePipeline(), FakeContext())
    assert len(jvm.hooks) == 2 and signals._current is not None
    ended()
    assert jvm.removed == 1 and signals._current is None and jvm.term_restored == 1


def test_a_sigterm_to_the_jvm_is_a_signal_to_the_driver(monkeypatch) -> None:
    jvm = FakeJvm(monkeypatch)
    pipeline = FakePipeline()
    ended = signals.install_jvm_stop_hook(pipeline, FakeContext())
    (term,) = jvm.term_handlers
    term()
    assert pipeline.calls == ["stop:SIGTERM to spark-submit"]
    term()                                   # the second stops at once
    assert pipeline.calls == ["stop:SIGTERM to spark-submit", "force"]
    ended()                                  # the loop ended by itself: all put back
    assert jvm.term_restored == 1 and jvm.removed == 1 and jvm.halted == []


def test_a_jvm_shutdown_stops_the_loop_and_ends_the_jvm_with_the_drivers_status(
        monkeypatch) -> None:
    jvm = FakeJvm(monkeypatch)
    pipeline = FakePipeline()
    ended = signals.install_jvm_stop_hook(pipeline, FakeContext())
    first, last = jvm.hooks
    try:
        threading.Timer(0.05, ended).start()          # the loop's final commit is done
        first()                                        # waits up to 11 s - 10 s = 1 s
        assert pipeline.calls == ["stop:spark-submit shutting down"]
        assert jvm.removed == 0                        # kept: the JVM is shutting down
        exit_via_jvm(0, parent_pid=-1)
        last()
        assert jvm.halted == [0]
    finally:
        watch_jvm_shutdown(None)


def test_without_a_hook_the_job_still_runs(monkeypatch, caplog) -> None:
    FakeJvm(monkeypatch, fail=True)
    ended = signals.install_jvm_stop_hook(FakePipeline(), FakeContext())
    ended()
    assert "no shutdown hook in spark-submit's JVM" in caplog.text
    assert signals._current is None


def test_outside_spark_submit_only_a_sigterm_to_the_jvm_is_handed_to_the_driver(
        monkeypatch) -> None:
    # `run` starts the JVM in a session of its own: a kill of the driver's process
    # group no longer reaches it, and a SIGTERM to the JVM alone stops the loop
    # after the batch instead of stopping Spark under it
    jvm = FakeJvm(monkeypatch)
    from storm_kafka_compat.engine import spark as spark_adapter
    monkeypatch.setattr(spark_adapter, "under_spark_submit", lambda: False)
    pipeline = FakePipeline()
    ended = signals.install_jvm_stop_hook(pipeline, FakeContext())
    assert jvm.hooks == [] and signals._current is None
    (term,) = jvm.term_handlers
    term()
    assert pipeline.calls == ["stop:SIGTERM to Spark's JVM"]
    ended()
    assert jvm.term_restored == 1 and jvm.removed == 0
