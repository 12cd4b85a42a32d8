"""``storm-kafka-compat ship``: a packed virtual environment for the executors.

On a cluster the executors' Python must import this package and its executor-side
dependencies (a Kafka client, PyYAML for the config objects). PySpark's documented
way is an archive of a packed virtual environment, unpacked by Spark next to each
executor (``spark.archives: env.tar.gz#environment``) and used as the executors'
interpreter (``spark.pyspark.python: ./environment/bin/python``). This module
builds it with venv-pack, the packing tool PySpark's documentation names:

1. a virtual environment from this interpreter's base Python;
2. the executor-side dependencies, at the versions the driver has;
3. this package, copied as installed (an editable install works too);
4. ``venv-pack`` into ``OUT/executor-env.tar.gz``.

The base interpreter must exist at the same path on the workers (venv-pack's
rule); the user's own bolt modules go with ``spark.pyFiles``.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

from storm_kafka_compat.errors import ConfigError, StormKafkaCompatError

#: what the executors import besides the standard library and pyspark (which Spark
#: puts on the workers' path itself)
EXECUTOR_REQUIREMENTS = ("kafka-python", "crc32c", "PyYAML", "javaproperties",
                         "sortedcontainers")
#: the executors' fetch backend, when the driver has it
OPTIONAL_REQUIREMENTS = ("confluent-kafka",)
ARCHIVE = "executor-env.tar.gz"


def requirements() -> List[str]:
    """``name==version`` of every executor-side dependency, as the driver has it."""
    out = []
    for name in (*EXECUTOR_REQUIREMENTS, *OPTIONAL_REQUIREMENTS):
        try:
            out.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            if name in EXECUTOR_REQUIREMENTS:
                raise ConfigError(f"{name} is not installed here; install storm-kafka-compat "
                                  "with its dependencies first", key="ship", value=name) from None
    return out


def spark_settings(archive: Path) -> Dict[str, str]:
    """The ``spark.conf`` entries that make the executors use ``archive``."""
    return {"spark.archives": f"{archive}#environment",
            "spark.pyspark.python": "./environment/bin/python"}


def build(out_dir: "os.PathLike[str] | str") -> Path:
    """Build ``out_dir/executor-env.tar.gz``; return its path.

    Raises
    ------
    StormKafkaCompatError
        venv-pack is missing, or a step failed (its output is in the message).
    """
    try:
        import venv_pack
    except ImportError as exc:
        raise StormKafkaCompatError("packing needs venv-pack: pip install "
                                    "'storm-kafka-compat[cluster]' (or pip install venv-pack)"
                                    ) from exc
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = out / "executor-env"
    if env.exists():
        shutil.rmtree(env)
    base = getattr(sys, "_base_executable", sys.executable)
    _step([base, "-m", "venv", str(env)], "creating the virtual environment")
    python = env / "bin" / "python"
    _step([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
           *requirements()], "installing the executor-side dependencies")
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig."
                           "get_paths()['purelib'])"], capture_output=True, text=True,
                          check=True).stdout.strip()
    package = Path(__file__).resolve().parents[1]
    shutil.copytree(package, Path(site) / package.name,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    archive = out / ARCHIVE
    if archive.exists():
        archive.unlink()
    venv_pack.pack(prefix=str(env), output=str(archive))
    return archive


def _step(cmd: List[str], what: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise StormKafkaCompatError(f"{what} failed ({' '.join(cmd[:4])} ...):\n"
                                    f"{(done.stdout + done.stderr)[-2000:]}")

