"""Storm's ``storm.py`` (the multilang-python jar of Apache Storm 2.8.3, from Maven Central
through :mod:`storm_kafka_compat.workshop.servers.maven`), put beside the multilang scripts of a
test. Never committed: resolved at test time like the other Maven peers."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path
from typing import Optional

from storm_kafka_compat.workshop.servers.maven import (Artifact, MavenBundle, MavenUnavailableError,
                                                       missing_prerequisite, resolve)

MULTILANG = MavenBundle("storm-multilang-2.8.3", (
    Artifact("org.apache.storm:multilang-python:2.8.3"),))


def why_not() -> Optional[str]:
    """Why storm.py cannot be had here, or None."""
    return missing_prerequisite(MULTILANG)


def storm_py_into(directory: Path) -> Path:
    """``directory/storm.py`` from the jar's ``resources/storm.py``."""
    jars = resolve(MULTILANG)
    jar = next(iter(sorted(jars.glob("multilang-python-*.jar"))), None)
    if jar is None:
        raise MavenUnavailableError(f"no multilang-python jar in {jars}")
    target = directory / "storm.py"
    with zipfile.ZipFile(jar) as zf, zf.open("resources/storm.py") as src, \
            open(target, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return target
