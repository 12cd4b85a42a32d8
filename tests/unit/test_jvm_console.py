"""What Spark's JVM prints reaches the operator without start-up chatter and without
stack traces (engine.jvm_console), at the default verbosity."""

from storm_kafka_compat.engine.jvm_console import HIDDEN, StackFilter

#: what a Python worker that crashed under a task printed (shortened: the fault round
#: counted about 48 lines per crash)
CRASH = (b"""WARNING: Using incubator modules: jdk.incubator.vector
26/11/25 12:00:01 ERROR Executor: Exception in task 0.0 in stage 3.0 (TID 3)
org.apache.spark.SparkException: Python worker exited unexpectedly (crashed)
\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator$$anonfun$1."""
         b"""applyOrElse(PythonRunner.scala:612)
\tat scala.runtime.AbstractPartialFunction.apply(AbstractPartialFunction.scala:35)
Caused by: java.io.EOFException
\tat java.base/java.io.DataInputStream.readInt(DataInputStream.java:398)
\t... 24 more
26/11/25 12:00:01 WARN TaskSetManager: Lost task 0.0 in stage 3.0 (TID 3): """
         b"""PythonException: Traceback (most recent call last):
  File "/x/pyspark/worker.py", line 1247, in main
    process()
  File "/x/tests/bolts.py", line 12, in record
    raise ValueError("boom")
ValueError: boom
a line a bolt printed
    an indented line a bolt printed""")


def test_stack_traces_are_hidden_and_said_so_once_each() -> None:
    keep = StackFilter()
    out = b"".join(keep(line) for line in CRASH.split(b"\n")).decode().splitlines()
    hidden = HIDDEN.decode().rstrip("\n")
    assert out == [
        "26/11/25 12:00:01 ERROR Executor: Exception in task 0.0 in stage 3.0 (TID 3)",
        "org.apache.spark.SparkException: Python worker exited unexpectedly (crashed)",
        hidden,
        "Caused by: java.io.EOFException",
        hidden,
        "26/11/25 12:00:01 WARN TaskSetManager: Lost task 0.0 in stage 3.0 (TID 3): "
        "PythonException: Traceback (most recent call last):",
        hidden,
        "ValueError: boom",
        "a line a bolt printed",
        "    an indented line a bolt printed",
    ]
