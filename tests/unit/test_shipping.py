"""What spark.pyFiles hands to addPyFile (engine.shipping), and the CONFIG key."""

import zipfile
from pathlib import Path

import pytest

from storm_kafka_compat.config import job_config_from_dict
from storm_kafka_compat.engine.shipping import resolve, ship, shippable
from storm_kafka_compat.errors import ConfigError


class _Context:
    def __init__(self) -> None:
        self.added = []

    def addPyFile(self, path: str) -> None:  # noqa: N802 - SparkContext's name
        self.added.append(path)


def test_each_kind_of_entry(tmp_path: Path) -> None:
    (tmp_path / "bolts.py").write_text("def f(t): pass\n")
    pkg = tmp_path / "mypkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "m.py").write_text("X = 1\n")
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "junk.pyc").write_bytes(b"\0")
    wheel = tmp_path / "dep-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("dep/__init__.py", "")
    entries = resolve(["bolts.py", "mypkg", wheel.name], str(tmp_path))
    sc = _Context()
    added = ship(sc, entries)
    assert sc.added == added
    assert added[0] == str(tmp_path / "bolts.py")
    with zipfile.ZipFile(added[1]) as zf:       # the package at the archive's root
        assert sorted(zf.namelist()) == ["mypkg/__init__.py", "mypkg/sub/__init__.py",
                                         "mypkg/sub/m.py"]
    assert added[2].endswith("dep-1.0-py3-none-any.zip")   # PySpark ignores .whl names


def test_bad_entries_name_the_value_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="'missing.py' does not exist"):
        resolve(["missing.py"], str(tmp_path))
    (tmp_path / "plain").mkdir()
    with pytest.raises(ConfigError, match="without __init__.py"):
        shippable(str(tmp_path / "plain"), str(tmp_path))
    (tmp_path / "notes.txt").write_text("")
    with pytest.raises(ConfigError, match="not a .py, .zip, .egg or .whl"):
        shippable(str(tmp_path / "notes.txt"), str(tmp_path))


def test_the_config_key() -> None:
    base = {"spout": {"topic": "t", "zkRoot": "/r", "id": "s"}, "hosts": {"bootstrap": "k:1"},
            "topology": {"name": "n"}, "bolt": "m:f"}
    job = job_config_from_dict({**base, "spark": {"pyFiles": ["a.py", "pkg"]}})
    assert job.spark.py_files == ("a.py", "pkg")
    assert job_config_from_dict({**base, "spark": {"pyFiles": "a.py, b.zip"}}).spark.py_files \
        == ("a.py", "b.zip")
    with pytest.raises(ConfigError, match="spark.pyFiles must be a non-empty list of files"):
        job_config_from_dict({**base, "spark": {"pyFiles": []}})
