"""Class archives of the workshop's JVMs (workshop/servers/class_archives.py): which
``java`` can write them, where each is kept, the options a command gets, and which
ends of a process keep what it wrote. No JVM here: the real one is in
tests/integration/test_class_archives.py."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from storm_kafka_compat.workshop.servers import class_archives
from storm_kafka_compat.workshop.servers.class_archives import (ARCHIVES_ENV, QUIET_OPTIONS,
                                                                archive_path, java_release,
                                                                keep, with_archive)


def _java(tmp_path: Path, version: str) -> str:
    home = tmp_path / f"jdk-{version}"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text("")
    (home / "release").write_text(f'IMPLEMENTOR="x"\nJAVA_VERSION="{version}"\n')
    return str(java)


@pytest.fixture
def archives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "archives"
    monkeypatch.setenv(ARCHIVES_ENV, str(directory))
    return directory


def _command(java: str, jar: Path) -> list:
    return [java, "-Xmx64m", "-cp", str(jar), "org.example.Main", "arg"]


@pytest.fixture
def first_start(tmp_path: Path, archives: Path):
    """``(java, jar, scratch, archive)`` after the first start's :func:`with_archive`."""
    java = _java(tmp_path, "17.0.15")
    jar = tmp_path / "a.jar"
    jar.write_bytes(b"x")
    command, writing = with_archive(_command(java, jar))
    assert writing is not None
    scratch, archive = writing
    assert command == [java, f"-XX:ArchiveClassesAtExit={scratch}", *QUIET_OPTIONS,
                       *_command(java, jar)[1:]]
    return java, jar, scratch, archive


def test_the_release_is_read_from_the_runtime_of_the_java_named(tmp_path):
    assert java_release(_java(tmp_path, "17.0.15")) == 17
    assert java_release(_java(tmp_path, "11.0.9.1")) == 11
    assert java_release(_java(tmp_path, "1.8.0_292")) == 8
    bare = tmp_path / "bare" / "bin"
    bare.mkdir(parents=True)
    assert java_release(str(bare / "java")) is None


def test_no_archive_unless_asked_for_and_the_java_writes_them(tmp_path, monkeypatch):
    jar = tmp_path / "a.jar"
    jar.write_bytes(b"x")
    monkeypatch.delenv(ARCHIVES_ENV, raising=False)
    java17 = _java(tmp_path, "17.0.15")
    assert archive_path(java17, str(jar), "org.example.Main") is None
    assert with_archive(_command(java17, jar)) == (_command(java17, jar), None)
    monkeypatch.setenv(ARCHIVES_ENV, str(tmp_path / "archives"))
    java11 = _java(tmp_path, "11.0.9.1")        # Java 11 cannot write one at exit
    assert archive_path(java11, str(jar), "org.example.Main") is None
    assert with_archive(_command(java11, jar))[1] is None


def test_an_archive_is_named_by_the_main_class_and_changes_with_a_jar(tmp_path, archives):
    java = _java(tmp_path, "17.0.15")
    jar = tmp_path / "a.jar"
    jar.write_bytes(b"x")
    first = archive_path(java, str(jar), "kafka.Kafka")
    assert first is not None and first.parent == archives
    assert first.name.startswith("kafka-") and first.suffix == ".jsa"
    assert archive_path(java, str(jar), "kafka.Kafka") == first
    assert archive_path(java, str(jar), "org.example.Other") != first
    jar.write_bytes(b"a new build")             # the JVM would refuse the old archive
    assert archive_path(java, str(jar), "kafka.Kafka") != first


def test_the_first_start_writes_at_exit_and_the_next_maps_it(first_start):
    java, jar, scratch, archive = first_start
    # another start while the first runs neither writes nor maps
    assert with_archive(_command(java, jar)) == (_command(java, jar), None)
    scratch.write_bytes(b"archive")             # what the JVM writes as it exits
    keep((scratch, archive), 143)               # ended on SIGTERM
    assert archive.read_bytes() == b"archive" and not scratch.exists()
    command, writing = with_archive(_command(java, jar))
    assert writing is None
    assert command == [java, f"-XX:SharedArchiveFile={archive}", *QUIET_OPTIONS,
                       *_command(java, jar)[1:]]


def test_a_killed_process_keeps_nothing_and_the_next_start_writes_again(first_start):
    java, jar, scratch, archive = first_start
    scratch.write_bytes(b"cut short")
    keep((scratch, archive), -signal.SIGKILL)
    assert not scratch.exists() and not archive.exists()
    _, again = with_archive(_command(java, jar))
    assert again is not None and again[1] == archive
    keep(again, None)                           # not ended: nothing kept, claim let go
    assert not archive.exists() and archive not in class_archives._writing
