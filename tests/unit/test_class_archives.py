"""Class archives of the workshop's JVMs (workshop/servers/class_archives.py): which
``java`` can write them, where each is kept, the options a command gets, and which
dumps keep what was written. No JVM here: the real one is in
tests/integration/test_class_archives.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from storm_kafka_compat.workshop.servers import class_archives
from storm_kafka_compat.workshop.servers.class_archives import (ARCHIVES_ENV, QUIET_OPTIONS,
                                                                archive_path, dump,
                                                                java_release, release,
                                                                with_archive)


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


def _jdk(tmp_path: Path, version: str = "17.0.15") -> str:
    """A fake JDK's ``java`` with a ``jcmd`` beside it that writes what it is asked to
    (its last argument) and says so."""
    java = _java(tmp_path, version)
    jcmd = Path(java).with_name("jcmd")
    jcmd.write_text('#!/bin/sh\nfor last; do :; done\necho "$2" > "$last"\n')
    jcmd.chmod(0o755)
    return java


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
    java17 = _jdk(tmp_path, "17.0.15")
    assert archive_path(java17, str(jar), "org.example.Main") is None
    assert with_archive(_command(java17, jar)) == (_command(java17, jar), None)
    monkeypatch.setenv(ARCHIVES_ENV, str(tmp_path / "archives"))
    java11 = _jdk(tmp_path, "11.0.9.1")         # before 17 a JVM cannot write one when asked
    assert archive_path(java11, str(jar), "org.example.Main") is None
    assert with_archive(_command(java11, jar))[1] is None


def test_an_archive_is_named_by_the_main_class_and_changes_with_a_jar(tmp_path, archives):
    java = _jdk(tmp_path)
    jar = tmp_path / "a.jar"
    jar.write_bytes(b"x")
    first = archive_path(java, str(jar), "kafka.Kafka")
    assert first is not None and first.parent == archives
    assert first.name.startswith("kafka-") and first.suffix == ".jsa"
    assert archive_path(java, str(jar), "kafka.Kafka") == first
    assert archive_path(java, str(jar), "org.example.Other") != first
    jar.write_bytes(b"a new build")             # the JVM would refuse the old archive
    assert archive_path(java, str(jar), "kafka.Kafka") != first


@pytest.fixture
def first_start(tmp_path: Path, archives: Path):
    """``(java, jar, writing)`` after the first start's :func:`with_archive`."""
    java = _jdk(tmp_path)
    jar = tmp_path / "a.jar"
    jar.write_bytes(b"x")
    command, writing = with_archive(_command(java, jar))
    assert writing is not None and writing.archive.parent == archives
    assert command == [java, "-XX:+RecordDynamicDumpInfo", *QUIET_OPTIONS,
                       *_command(java, jar)[1:]]
    return java, jar, writing


def test_the_first_start_writes_once_ready_and_the_next_maps_it(first_start):
    java, jar, writing = first_start
    # another start while the first has not written it neither writes nor maps
    assert with_archive(_command(java, jar)) == (_command(java, jar), None)
    assert dump(writing, 4242)
    assert writing.archive.read_text() == "VM.cds\n" and not writing.scratch.exists()
    command, again = with_archive(_command(java, jar))
    assert again is None
    assert command == [java, f"-XX:SharedArchiveFile={writing.archive}", *QUIET_OPTIONS,
                       *_command(java, jar)[1:]]


def test_a_failed_dump_or_an_early_end_leaves_nothing_and_the_next_start_writes(first_start):
    java, jar, writing = first_start
    Path(writing.jcmd).write_text("#!/bin/sh\necho half > \"$4\"\nexit 1\n")
    assert not dump(writing, 4242)              # jcmd refused: the scratch is not kept
    assert not writing.archive.exists() and not writing.scratch.exists()
    _, again = with_archive(_command(java, jar))
    assert again is not None and again.archive == writing.archive
    release(again)                              # ended before it was ready
    assert again.archive not in class_archives._writing
    assert with_archive(_command(java, jar))[1] is not None


def test_no_archive_without_a_jcmd_beside_the_java(tmp_path, archives):
    java = _java(tmp_path, "17.0.15")
    jar = tmp_path / "a.jar"
    jar.write_bytes(b"x")
    assert with_archive(_command(java, jar)) == (_command(java, jar), None)
