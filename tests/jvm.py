"""JVM options for the short-lived JVMs the tests start (Spark's drivers and executors;
the workshop's servers start theirs so too): C1 only and the serial GC. The suite is
bound by CPU on two cores, and C2's compiler threads cost a short-lived JVM most of its
start-up: a local Spark session and ten small jobs took 12 CPU-seconds with the
defaults, 7 with these.

Spark's JVMs also share the classes they load from one archive (Java's dynamic class
data sharing): :func:`make_spark_class_archive` runs one local session that writes
the archive at its exit, once per machine (a fresh one: about 20 s), and every Spark
JVM started after it maps the classes instead of loading and verifying them again: a
local session and ten small jobs took 8.3 to 9.7 CPU-seconds without it, 6.0 to 6.2
with it. The JVM checks the archive against its own build and class path and, when they
differ, runs as without it (its warnings are switched off: some of these JVMs' output
is read)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

from storm_kafka_compat.workshop.servers.class_archives import (ARCHIVES_ENV, QUIET_OPTIONS,
                                                                archive_path)

FAST_START_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

#: quiet when the archive does not match this JVM (it then runs without it)
_QUIET = " ".join(QUIET_OPTIONS)

#: what the archiving session runs: the classes of a session, an RDD job through a
#: Python worker and a DataFrame query
_SESSION = r"""
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .getOrCreate())
spark.sparkContext.parallelize(range(100), 2).map(lambda x: x * 2).sum()
spark.range(10).selectExpr("id * 2 AS twice").collect()
spark.stop()
"""


def class_archives() -> Path:
    """The directory of the suite's class archives (the workshop's servers' too:
    :data:`ARCHIVES_ENV`): under the workshop's cache, kept from run to run."""
    from storm_kafka_compat.workshop.servers.kafka_package import cache_dir

    return Path(os.environ.get(ARCHIVES_ENV) or cache_dir() / "class-archives")


def spark_class_archive() -> Optional[Path]:
    """Where the archive of this pyspark's jars and this ``java`` is kept
    (:func:`~storm_kafka_compat.workshop.servers.class_archives.archive_path`, as for
    the servers), or None when this ``java`` cannot write one."""
    import pyspark

    from storm_kafka_compat.workshop.servers.zookeeper import java_binary

    jars = sorted(str(jar) for jar in (Path(pyspark.__file__).parent / "jars").glob("*.jar"))
    return archive_path(java_binary(), os.pathsep.join(jars),
                        "org.apache.spark.deploy.SparkSubmit")


def spark_java_options() -> str:
    """:data:`FAST_START_JAVA_OPTIONS`, with the shared archive when there is one."""
    archive = spark_class_archive()
    if archive is None or not archive.exists():
        return FAST_START_JAVA_OPTIONS
    return f"{FAST_START_JAVA_OPTIONS} -XX:SharedArchiveFile={archive} {_QUIET}"


def make_spark_class_archive(timeout_s: float = 180.0) -> Optional[str]:
    """Write :func:`spark_class_archive` unless it exists; None when done, else why
    not (the tests then run without it, as before)."""
    archive = spark_class_archive()
    if archive is None:
        return f"this java cannot write class archives, or {ARCHIVES_ENV} is not set"
    if archive.exists():
        return None
    archive.parent.mkdir(parents=True, exist_ok=True)
    scratch = str(archive.with_name(f"{archive.stem}.{os.getpid()}.tmp"))
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
               SPARK_SUBMIT_OPTS=f"{FAST_START_JAVA_OPTIONS} "
                                 f"-XX:ArchiveClassesAtExit={scratch} {_QUIET}")
    try:
        done = subprocess.run([sys.executable, "-c", _SESSION], env=env, timeout=timeout_s,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
        if done.returncode != 0 or not os.path.exists(scratch):
            return (f"the archiving session exited with {done.returncode}: "
                    f"{done.stdout.decode(errors='replace')[-500:]}")
        os.replace(scratch, archive)     # whole or not at all
        return None
    except subprocess.TimeoutExpired:
        return f"the archiving session did not end within {timeout_s:.0f} s"
    finally:
        if os.path.exists(scratch):
            os.unlink(scratch)
