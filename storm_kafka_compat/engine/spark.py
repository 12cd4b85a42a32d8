"""The Spark session the pipeline runs on (thin adapter)."""

from __future__ import annotations

import os
import re
import sys
from typing import TYPE_CHECKING, Any, Mapping, Optional, Tuple

from storm_kafka_compat.config import SparkConfig

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: drop the JVM's start-up chatter from stderr (engine.jvm_console); the command
#: line sets it at its default verbosity, library users keep Spark's console as is
quiet_start = False


def under_spark_submit() -> bool:
    """True when ``spark-submit`` launched this driver: its JVM is already running
    (``PYSPARK_GATEWAY_PORT``) with the submitted ``--master`` and settings."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def prepare_environment(extra_python_paths: Tuple[str, ...] = (), *, local: bool = True) -> None:
    """Environment the Python workers need: this interpreter, the driver's import
    path (so bolts in the user's project import there) and, for a local master
    only, loopback binding (executors on other hosts could not reach it)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    paths = [p for p in (*extra_python_paths, os.getcwd()) if p]
    current = os.environ.get("PYTHONPATH", "")
    merged = [p for p in paths if p not in current.split(os.pathsep)]
    if merged:
        os.environ["PYTHONPATH"] = os.pathsep.join(merged + ([current] if current else []))


def is_local(config: SparkConfig) -> bool:
    """The driver runs its executors in-process (``local[...]``, not under spark-submit):
    only then is loopback binding right."""
    return not under_spark_submit() and config.master.startswith("local")


#: attempts per task on a local master, as ``spark.task.maxFailures`` gives a cluster
LOCAL_TASK_ATTEMPTS = 4
_LOCAL_MASTER = re.compile(r"local(?:\[(\d+|\*)\])?")


def with_task_retries(master: str) -> str:
    """``local`` / ``local[N]`` / ``local[*]`` with :data:`LOCAL_TASK_ATTEMPTS`
    attempts per task (``local[N,4]``); any other master as it is.

    Spark's local mode tries a task once, so a Python worker that dies mid-batch
    fails the whole batch's job and every partition's results with it; with
    retries only its task runs again and the others' progress is kept (issue 17),
    as on a cluster. ``local[N,F]`` keeps the F it was given."""
    match = _LOCAL_MASTER.fullmatch(master.strip())
    if match is None:
        return master
    return f"local[{match.group(1) or 1},{LOCAL_TASK_ATTEMPTS}]"


class _JavaCallback:
    """A Python callable behind a Java interface, which the JVM calls through py4j's
    callback server; a subclass names the interface and its method."""

    def __init__(self, action: Any) -> None:
        self._action = action

    def _call(self, *_args: Any) -> None:
        self._action()

    def toString(self) -> str:  # noqa: N802 - the Java name
        return f"storm-kafka-compat {type(self).__name__}"


class _ShutdownHook(_JavaCallback):
    """The ``scala.Function0`` that Spark's ShutdownHookManager runs."""

    class Java:
        implements = ["scala.Function0"]

    apply = _JavaCallback._call


# Spark calls a `() => Unit` hook by its specialised name
setattr(_ShutdownHook, "apply$mcV$sp", _JavaCallback._call)


class _SignalHandler(_JavaCallback):
    """The ``sun.misc.SignalHandler`` the JVM runs on a signal."""

    class Java:
        implements = ["sun.misc.SignalHandler"]

    handle = _JavaCallback._call


def add_shutdown_hooks(spark_context: Any, first: Any, last: Any) -> Any:
    """Have the JVM's shutdown run ``first`` before the SparkContext is stopped and
    ``last`` after all of Spark's hooks (the temporary directories' included);
    return what takes both out again."""
    from pyspark.java_gateway import ensure_callback_server_started
    ensure_callback_server_started(spark_context._gateway)  # type: ignore[no-untyped-call]
    manager = spark_context._jvm.org.apache.spark.util.ShutdownHookManager
    # Spark runs the highest priority first: the SparkContext's is 50, its
    # temporary directories' 25
    refs = [manager.addShutdownHook(manager.SPARK_CONTEXT_SHUTDOWN_PRIORITY() + 1,
                                    _ShutdownHook(first)),
            manager.addShutdownHook(0, _ShutdownHook(last))]

    def remove() -> None:
        for ref in refs:
            manager.removeShutdownHook(ref)
    return remove


def handle_jvm_signal(spark_context: Any, name: str, action: Any) -> Any:
    """Have the JVM call ``action`` on signal ``name`` (``"TERM"``) instead of
    shutting down; return what gives the JVM its own handler back."""
    from pyspark.java_gateway import ensure_callback_server_started
    ensure_callback_server_started(spark_context._gateway)  # type: ignore[no-untyped-call]
    signal_class = spark_context._jvm.sun.misc.Signal
    previous = signal_class.handle(signal_class(name), _SignalHandler(action))

    def restore() -> None:
        signal_class.handle(signal_class(name), previous)
    return restore


def shutdown_timeout_ms(spark_context: Any) -> Optional[int]:
    """``spark.shutdown.timeout`` in ms (Spark's time syntax) as the JVM started with it
    (spark-submit's ``--conf``; Spark reads it there, not from the SparkContext's
    settings), None when not set."""
    jvm = spark_context._jvm
    value = jvm.java.lang.System.getProperty("spark.shutdown.timeout")
    if value is None:
        return None
    return int(jvm.org.apache.spark.network.util.JavaUtils.timeStringAsMs(value))


def halt_jvm(spark_context: Any, status: int) -> None:
    """End the JVM now with ``status`` (from a shutdown hook, where exit would block)."""
    spark_context._jvm.java.lang.Runtime.getRuntime().halt(status)


def launch_own_session_jvm(master: str, settings: Mapping[str, str]) -> None:
    """Start Spark's JVM as PySpark would (the same ``spark-submit`` command line,
    stdin a pipe it exits on), but in a session of its own.

    A supervisor or a container runtime stops a job with a signal to its process
    group (``kill -TERM -- -PGID``). In the driver's group the JVM would stop the
    SparkContext and its Python workers would die under the batch in flight; in
    its own session only the driver gets the signal, finishes the batch and
    commits (engine.signals). The JVM still ends with the driver: PySpark's gateway
    exits when its stdin closes."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    conf = SparkConf().setMaster(master).setAll(list(settings.items()))
    gateway = launch_gateway(conf, popen_kwargs={"start_new_session": True})  # type: ignore[no-untyped-call]
    SparkContext._ensure_initialized(gateway=gateway)


def get_spark(config: Optional[SparkConfig] = None) -> "SparkSession":
    """Get or create the SparkSession described by ``config`` (UI off unless its
    ``conf`` turns it on) and ship its ``py_files`` to the executors.

    Precedence: under ``spark-submit`` the submitted ``--master`` and settings win
    over the CONFIG's (Spark applies the command line's first); otherwise the
    CONFIG's ``spark`` section sets them. ``spark.pyspark.python`` in ``conf``
    chooses the executors' interpreter (PySpark itself only reads
    ``PYSPARK_PYTHON``). A local master tries each task up to four times
    (:func:`with_task_retries`)."""
    config = config or SparkConfig()
    submitted = under_spark_submit()
    executor_python = dict(config.conf).get("spark.pyspark.python")
    if executor_python and not submitted:
        os.environ["PYSPARK_PYTHON"] = executor_python
    prepare_environment(local=is_local(config))
    from pyspark.sql import SparkSession

    builder = SparkSession.builder if submitted else \
        SparkSession.builder.master(with_task_retries(config.master))
    settings = {"spark.app.name": config.app_name, "spark.ui.enabled": "false",
                "spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "2",
                "spark.python.worker.reuse": "true", **dict(config.conf)}
    if submitted:
        # spark-submit's --conf (and --name) win: the builder would override them
        from pyspark import SparkConf, SparkContext
        SparkContext._ensure_initialized()
        given = SparkConf()
        settings = {k: v for k, v in settings.items() if not given.contains(k)}
    for key, value in settings.items():
        builder = builder.config(key, value)
    from storm_kafka_compat.engine.jvm_console import filtered_jvm_stderr
    from pyspark import SparkContext
    new_jvm = SparkContext._gateway is None    # the JVM inherits stderr when it starts
    with filtered_jvm_stderr(quiet_start and new_jvm and not submitted):
        if new_jvm and not submitted:
            launch_own_session_jvm(with_task_retries(config.master), settings)
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    if config.py_files:
        from storm_kafka_compat.engine.shipping import ship
        ship(spark.sparkContext, config.py_files)
    return spark
