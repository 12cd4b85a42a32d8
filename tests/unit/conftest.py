"""Unit tests run without servers and in this process only: the record file the Spark
tests share with their executors (STORM_KAFKA_COMPAT_TEST_RECORD, set process-wide
once a Spark test ran) must not leak into them, or the test bolts' "first time"
markers would be shared across tests."""

import pytest

from tests import bolts


@pytest.fixture(autouse=True)
def _isolated_test_bolts(monkeypatch):
    monkeypatch.delenv("STORM_KAFKA_COMPAT_TEST_RECORD", raising=False)
    bolts._ONCE.clear()
    bolts.SEEN.clear()
    yield
