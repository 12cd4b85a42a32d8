"""What the executors need besides the package: the user's modules (``spark.pyFiles``).

On ``local[...]`` the Python workers share the driver's interpreter and import
path; on a cluster they do not. Each ``spark.pyFiles`` entry reaches them through
``SparkContext.addPyFile`` (what ``spark-submit --py-files`` does): a ``.py``
file, a ``.zip``/``.egg`` archive, a package directory (zipped here, the package
at the archive's root) or a ``.whl`` (PySpark only puts .zip/.egg/.jar on the
workers' path, so a wheel is added under a ``.zip`` name). Relative paths are
relative to the CONFIG file.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Iterable, List

from storm_kafka_compat.errors import ConfigError


def resolve(py_files: Iterable[str], base_dir: str) -> List[str]:
    """``py_files`` with relative paths made absolute against ``base_dir``; each must
    exist."""
    out = []
    for entry in py_files:
        path = Path(entry) if os.path.isabs(entry) else Path(base_dir) / entry
        if not path.exists():
            raise ConfigError(f"spark.pyFiles entry {entry!r} does not exist ({path}); give "
                              "a .py file, a package directory or a .zip/.egg/.whl, relative "
                              "to the CONFIG file", key="spark.pyFiles", value=entry)
        out.append(str(path.resolve()))
    return out


def shippable(path: str, work_dir: str) -> str:
    """The file to hand to ``addPyFile`` for one ``spark.pyFiles`` entry."""
    p = Path(path)
    if p.is_dir():
        if not (p / "__init__.py").exists():
            raise ConfigError(f"spark.pyFiles entry {path!r} is a directory without "
                              "__init__.py; give a package directory, or the .py files",
                              key="spark.pyFiles", value=path)
        archive = Path(work_dir) / f"{p.name}.zip"
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
            for root, dirs, files in os.walk(p):
                dirs[:] = [d for d in dirs if d != "__pycache__"]
                for name in files:
                    if name.endswith((".pyc", ".pyo")):
                        continue
                    full = Path(root) / name
                    zf.write(full, str(Path(p.name) / full.relative_to(p)))
        return str(archive)
    if p.suffix == ".whl":
        renamed = Path(work_dir) / (p.stem + ".zip")
        shutil.copyfile(p, renamed)
        return str(renamed)
    if p.suffix in (".py", ".zip", ".egg"):
        return str(p)
    raise ConfigError(f"spark.pyFiles entry {path!r} is not a .py, .zip, .egg or .whl file "
                      "nor a package directory", key="spark.pyFiles", value=path)


def ship(sc: object, py_files: Iterable[str]) -> List[str]:
    """``addPyFile`` every entry (absolute paths); return what was added."""
    work_dir = tempfile.mkdtemp(prefix="skc-pyfiles-")
    added = []
    for path in py_files:
        target = shippable(path, work_dir)
        sc.addPyFile(target)  # type: ignore[attr-defined]
        added.append(target)
    return added
