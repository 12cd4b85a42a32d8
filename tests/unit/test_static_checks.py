"""The package type-checks (mypy, strict) and it and the tests lint (ruff) clean: the Protocols stay
the types at the seams, and what the redesign of issue 24 removed (``Any`` at the
seams, ``_private`` imports across modules) does not creep back. Both tools and
their settings are in pyproject.toml; both come with the ``[test]`` extra."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def test_mypy_strict_finds_nothing_in_the_package() -> None:
    done = _run("mypy", "--config-file", str(ROOT / "pyproject.toml"))
    assert done.returncode == 0, f"mypy:\n{done.stdout}{done.stderr}"
    assert "Success: no issues found" in done.stdout


def test_ruff_finds_nothing_in_the_package_or_the_tests() -> None:
    done = _run("ruff", "check", "storm_kafka_compat", "tests")
    assert done.returncode == 0, f"ruff:\n{done.stdout}{done.stderr}"
