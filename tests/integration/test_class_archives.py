"""A real JVM of the workshop writes its class archive when it stops and the next start
maps it (workshop/servers/class_archives.py): ZooKeeper from pyspark's jars, started
three times over one archive directory."""

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


def test_zookeeper_writes_its_archive_at_stop_and_maps_it_next_time(tmp_path, monkeypatch):
    archives = tmp_path / "archives"
    monkeypatch.setenv(ARCHIVES_ENV, str(archives))
    first = EmbeddedZooKeeper(base_dir=tmp_path / "first").start()
    assert "-XX:ArchiveClassesAtExit=" in _cmdline(first.pid)
    assert _ruok(first) == b"imok"
    first.stop()
    written = sorted(archives.glob("*.jsa"))
    assert [p.name.split("-")[0] for p in written] == ["zookeeperservermain"]
    assert written[0].stat().st_size > 1_000_000 and not list(archives.glob("*.tmp"))
    for name in ("second", "third"):
        server = EmbeddedZooKeeper(base_dir=tmp_path / name).start()
        try:
            assert f"-XX:SharedArchiveFile={written[0]}" in _cmdline(server.pid)
            assert _ruok(server) == b"imok"
        finally:
            server.stop()
    assert sorted(archives.glob("*.jsa")) == written


def test_a_killed_zookeeper_leaves_no_archive(tmp_path, monkeypatch):
    archives = tmp_path / "archives"
    monkeypatch.setenv(ARCHIVES_ENV, str(archives))
    server = EmbeddedZooKeeper(base_dir=tmp_path / "killed").start()
    server.kill()
    assert not list(archives.iterdir())
    again = EmbeddedZooKeeper(base_dir=tmp_path / "again").start()
    try:
        assert "-XX:ArchiveClassesAtExit=" in _cmdline(again.pid)
    finally:
        again.stop()
    assert len(list(archives.glob("*.jsa"))) == 1
