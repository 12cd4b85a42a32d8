"""Stopping by signal, and the stop that begins in spark-submit's JVM
(engine.signals): the pure coordination, without Spark."""

from __future__ import annotations

import os
import signal
import threading
from typing import List

import pytest

from storm_kafka_compat.engine.signals import (JvmShutdown, batch_wait_s, exit_via_jvm,
                                               install_stop_handlers, watch_jvm_shutdown)


class FakePipeline:
    def __init__(self, stopping: bool = False) -> None:
        self.stopping = stopping
        self.signals_received = 0
        self.calls: List[str] = []

    def stop(self, reason: str) -> None:
        self.calls.append(f"stop:{reason}")
        self.stopping = True

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


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.now += s


def test_exit_via_jvm_does_nothing_unless_the_jvm_is_shutting_down() -> None:
    clock = FakeClock()
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
    clock = FakeClock()
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
