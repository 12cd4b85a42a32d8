"""Jars from Maven Central: the one place the real peers that Maven serves come from
(Apache Kafka 3.9 and 4.x brokers, Apache Storm, Spark's own Kafka source).

A :class:`MavenBundle` names a set of artifacts (with the exclusions a class path
needs, such as two SLF4J bindings); :func:`resolve` writes a small pom for it under
the cache (``$STORM_KAFKA_COMPAT_CACHE`` or ``~/.cache/storm-kafka-compat``, outside
the repository), runs ``mvn dependency:copy-dependencies`` once, and renames the
finished jar directory into place under a file lock, so a half-finished download is
never used and concurrent first uses wait for each other::

    jars = resolve(MavenBundle("kafka-3.9.2", (Artifact("org.apache.kafka:kafka_2.13:3.9.2"),)))
    java -cp "<jars>/*" kafka.Kafka server.properties

Maven keeps its own repository (``~/.m2``, or ``$STORM_KAFKA_COMPAT_M2``) for the
downloads; the bundle directory holds copies, and a ``bundle.txt`` listing what was
asked for: a bundle whose list changed is resolved again.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence, Tuple
from xml.sax.saxutils import escape

from storm_kafka_compat.errors import EmbeddedServerError
from storm_kafka_compat.workshop.servers.kafka_package import cache_dir
from storm_kafka_compat.workshop.servers.zookeeper import java_binary

logger = logging.getLogger(__name__)

#: how long one bundle's first resolution may take (a cold ~/.m2 on a slow link)
RESOLVE_TIMEOUT_S = 1200


class MavenUnavailableError(EmbeddedServerError):
    """``mvn`` is missing, Maven Central did not answer, or an artifact did not resolve."""


@dataclass(frozen=True)
class Artifact:
    """One dependency: ``group:artifact:version[:classifier]``, with the
    ``group:artifact`` pairs to leave out of its transitive dependencies."""

    coordinates: str
    exclusions: Tuple[str, ...] = ()

    def __post_init__(self) -> None:
        parts = self.coordinates.split(":")
        if len(parts) not in (3, 4) or not all(parts):
            raise ValueError(f"Maven coordinates {self.coordinates!r} are not "
                             "group:artifact:version[:classifier]")
        for exclusion in self.exclusions:
            if len(exclusion.split(":")) != 2:
                raise ValueError(f"exclusion {exclusion!r} is not group:artifact")

    def pom_xml(self) -> str:
        """This artifact as a ``<dependency>`` element."""
        group, artifact, version, *classifier = self.coordinates.split(":")
        lines = [f"<groupId>{escape(group)}</groupId>",
                 f"<artifactId>{escape(artifact)}</artifactId>",
                 f"<version>{escape(version)}</version>"]
        if classifier:
            lines.append(f"<classifier>{escape(classifier[0])}</classifier>")
        if self.exclusions:
            lines.append("<exclusions>")
            for exclusion in self.exclusions:
                ex_group, ex_artifact = exclusion.split(":")
                lines.append(f"<exclusion><groupId>{escape(ex_group)}</groupId>"
                             f"<artifactId>{escape(ex_artifact)}</artifactId></exclusion>")
            lines.append("</exclusions>")
        return "<dependency>" + "".join(lines) + "</dependency>"


@dataclass(frozen=True)
class MavenBundle:
    """A named set of artifacts resolved together into one directory of jars.

    Parameters
    ----------
    name : str
        The directory name under ``<cache>/maven/`` (e.g. ``kafka-3.9.2``).
    artifacts : sequence of Artifact
    exclusions : sequence of str
        ``group:artifact`` pairs left out of every artifact's dependencies.
    """

    name: str
    artifacts: Tuple[Artifact, ...]
    exclusions: Tuple[str, ...] = ()

    def pom(self) -> str:
        """The pom :func:`resolve` runs Maven on."""
        deps = []
        for artifact in self.artifacts:
            if self.exclusions:
                artifact = Artifact(artifact.coordinates,
                                    tuple(dict.fromkeys(artifact.exclusions + self.exclusions)))
            deps.append(artifact.pom_xml())
        return ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<project xmlns=\"http://maven.apache.org/POM/4.0.0\">"
                "<modelVersion>4.0.0</modelVersion>"
                "<groupId>storm-kafka-compat.peers</groupId>"
                f"<artifactId>{escape(self.name)}</artifactId><version>1</version>"
                "<packaging>pom</packaging>"
                f"<dependencies>{''.join(deps)}</dependencies></project>\n")

    def manifest(self) -> str:
        """What was asked for, one line per artifact: a changed list re-resolves."""
        rows = [a.coordinates + (" -" + ",".join(a.exclusions) if a.exclusions else "")
                for a in self.artifacts]
        if self.exclusions:
            rows.append("exclude " + ",".join(self.exclusions))
        return "\n".join(rows) + "\n"


def _mvn() -> Optional[str]:
    return shutil.which("mvn")


def bundle_dir(bundle: MavenBundle) -> Path:
    """Where a bundle's jars live once resolved (``<cache>/maven/<name>/jars``)."""
    return cache_dir() / "maven" / bundle.name


def _resolved(bundle: MavenBundle) -> bool:
    target = bundle_dir(bundle)
    try:
        return ((target / "jars").is_dir()
                and (target / "bundle.txt").read_text() == bundle.manifest())
    except OSError:
        return False


def missing_prerequisite(bundle: Optional[MavenBundle] = None) -> Optional[str]:
    """Why Maven-served jars cannot be used here (no ``java``, or no ``mvn`` and
    nothing cached), or None. Tests skip with this reason."""
    try:
        java_binary()
    except EmbeddedServerError as exc:
        return str(exc)
    if bundle is not None and _resolved(bundle):
        return None
    if _mvn() is None:
        return "'mvn' is not on PATH: install Maven to fetch the jars from Maven Central"
    return None


def resolve(bundle: MavenBundle, *, timeout_s: float = RESOLVE_TIMEOUT_S) -> Path:
    """The directory of the bundle's jars, resolved with Maven on first use.

    Raises
    ------
    MavenUnavailableError
        ``mvn`` is missing, or Maven failed (the message holds the artifacts that did
        not resolve, from Maven's output).
    """
    target = bundle_dir(bundle)
    if _resolved(bundle):
        return target / "jars"
    root = target.parent
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{bundle.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _resolved(bundle):
            return target / "jars"
        mvn = _mvn()
        if mvn is None:
            raise MavenUnavailableError(
                f"{bundle.name} comes from Maven Central and 'mvn' is not on PATH: install "
                f"Maven, or put the jars in {target / 'jars'} with bundle.txt")
        logger.info("resolving %s from Maven Central into %s", bundle.name, target)
        with tempfile.TemporaryDirectory(dir=root) as tmp:
            work = Path(tmp)
            (work / "pom.xml").write_text(bundle.pom())
            command = [mvn, "-B", "-q", "-Dstyle.color=never", "-f", str(work / "pom.xml"),
                       "dependency:copy-dependencies", f"-DoutputDirectory={work / 'jars'}",
                       "-DincludeScope=runtime"]
            local_repo = os.environ.get("STORM_KAFKA_COMPAT_M2")
            if local_repo:
                command.append(f"-Dmaven.repo.local={local_repo}")
            try:
                proc = subprocess.run(command, cwd=tmp, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      timeout=timeout_s)
            except subprocess.TimeoutExpired as exc:
                raise MavenUnavailableError(
                    f"resolving {bundle.name} took over {timeout_s:.0f} s; is Maven Central "
                    "reachable?") from exc
            if proc.returncode != 0 or not (work / "jars").is_dir():
                raise MavenUnavailableError(
                    f"Maven could not resolve {bundle.name} "
                    f"({', '.join(a.coordinates for a in bundle.artifacts)}), exit "
                    f"{proc.returncode}: {_maven_errors(proc.stdout.decode(errors='replace'))}")
            (work / "bundle.txt").write_text(bundle.manifest())
            (work / "pom.xml").rename(work / "bundle-pom.xml")
            shutil.rmtree(target, ignore_errors=True)
            staged = work / "staged"
            staged.mkdir()
            os.replace(work / "jars", staged / "jars")
            os.replace(work / "bundle.txt", staged / "bundle.txt")
            os.replace(work / "bundle-pom.xml", staged / "pom.xml")
            os.replace(staged, target)
        logger.info("%s resolved: %d jars", bundle.name, len(list((target / "jars").glob("*.jar"))))
    return target / "jars"


def _maven_errors(output: str) -> str:
    """The lines of Maven's output that say what failed (its ``[ERROR]`` lines,
    without the generic help that follows them)."""
    output = re.sub(r"\x1b\[[0-9;]*m", "", output)
    lines = [line.replace("[ERROR]", "").strip() for line in output.splitlines()
             if line.startswith("[ERROR]")]
    lines = [line for line in lines if line and not line.startswith(
        ("-> [Help", "To see the full", "Re-run Maven", "For more information", "[Help"))]
    return " | ".join(lines[:4]) or output.strip()[-600:]


def classpath(bundle: MavenBundle, extra: Sequence["os.PathLike[str]"] = ()) -> str:
    """The bundle's jars (resolved on first use) as a class path, ``extra`` first."""
    jars = resolve(bundle)
    entries = [str(p) for p in extra]
    entries += sorted(str(p) for p in jars.glob("*.jar"))
    return os.pathsep.join(entries)
