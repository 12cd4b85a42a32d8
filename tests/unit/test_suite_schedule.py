"""The suite's own scheduling under ``-n`` (tests/conftest.py): a file named in a
group must exist, or its tests would silently fall back to a group of their own."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import BROKER_FAULT_FILES, LONGEST_GROUPS, parallel_group, storm_files

TESTS = Path(__file__).resolve().parents[1]


def test_every_named_file_exists_and_the_fault_suite_has_two_groups() -> None:
    faults = sorted(p.name for p in (TESTS / "faults").glob("test_*.py"))
    assert set(BROKER_FAULT_FILES) <= set(faults)
    groups = {parallel_group(f"tests/faults/{name}::t") for name in faults}
    assert groups == {"faults", "faults-brokers"}
    for group in LONGEST_GROUPS:
        assert group in ("faults", "faults-brokers", "storm") or (TESTS.parent / group).is_file()
    assert "tests/integration/test_storm_kafka_peer.py" in storm_files()
    assert parallel_group("tests/integration/test_storm_kafka_peer.py::t") == "storm"
