"""A real JVM of the workshop writes its class archive once it is ready and the next
starts map it (workshop/servers/class_archives.py): ZooKeeper from pyspark's jars,
started three times over one archive directory, the first one killed."""

from __future__ import annotations

import socket

import pytest

from storm_kafka_compat.workshop.servers.class_archives import ARCHIVES_ENV
from storm_kafka_compat.workshop.servers.zookeeper import EmbeddedZooKeeper

pytestmark = pytest.mark.integration


def _ruok(server: EmbeddedZooKeeper) -> bytes:
    host, port = server.connect_string.split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(b"ruok")
        return sock.recv(16)


def _cmdline(pid: int) -> str:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().replace(b"\0", b" ").decode()


def test_zookeeper_writes_its_archive_once_ready_and_the_next_starts_map_it(tmp_path,
                                                                            monkeypatch):
    archives = tmp_path / "archives"
    monkeypatch.setenv(ARCHIVES_ENV, str(archives))
    first = EmbeddedZooKeeper(base_dir=tmp_path / "first").start()
    try:
        assert "-XX:+RecordDynamicDumpInfo" in _cmdline(first.pid)
        written = sorted(archives.glob("*.jsa"))     # written while it serves
        assert [p.name.split("-")[0] for p in written] == ["zookeeperservermain"]
        assert written[0].stat().st_size > 1_000_000 and not list(archives.glob("*.tmp"))
        assert _ruok(first) == b"imok"
    finally:
        first.kill()                                 # a kill after it leaves it whole
    for name in ("second", "third"):
        server = EmbeddedZooKeeper(base_dir=tmp_path / name).start()
        try:
            assert f"-XX:SharedArchiveFile={written[0]}" in _cmdline(server.pid)
            assert _ruok(server) == b"imok"
        finally:
            server.stop()
    assert sorted(archives.glob("*.jsa")) == written
    for name in ("first", "second", "third"):      # the JVM said nothing of archives
        assert "[cds" not in (tmp_path / name / "zookeeper.log").read_text()
