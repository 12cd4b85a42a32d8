"""A clock in seconds that moves only when slept on, for the ``clock``/``sleep``
parameters of retry loops and waits (time is injected, never slept for real)."""

from __future__ import annotations

from typing import List


class ManualClock:
    """``clock()`` returns :attr:`now`; ``sleep(s)`` records ``s`` and moves it on."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now
        self.sleeps: List[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
