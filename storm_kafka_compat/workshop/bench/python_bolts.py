"""Per-tuple cost of a streamparse bolt against the same logic as this project's own bolt.

Three ways to run streamparse's quickstart ``WordCountBolt`` logic (count a word, ``dog``
as 10, emit ``[word, count]``) on the same tuples, in one bolt task, no Spark and no Kafka:

* ``own``: the logic as a :class:`~storm_kafka_compat.topology.bolts.BasicBolt`;
* ``streamparse``: the quickstart's class run in-process (compat/streamparse.py);
* ``multilang``: the same class in its own process, run by ``python -m streamparse.run``
  as Storm runs it, spoken to over the multilang protocol (compat/shell.py).

Each figure is wall time per input tuple through ``process_batch`` (scheme, spout tuple,
the bolt, its emit to a downstream task, acks), best of ``rounds``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from collections import Counter
from typing import Any, Dict, List, Optional, Tuple

from storm_kafka_compat.executor.dag import LocalRuntime
from storm_kafka_compat.executor.process import process_batch
from storm_kafka_compat.kafka.client import KafkaMessage
from storm_kafka_compat.batch import FetchPlan
from storm_kafka_compat.topology.bolts import BasicBolt, BasicOutputCollector
from storm_kafka_compat.topology.schemes import MessageLike
from storm_kafka_compat.topology.spec import from_spec
from storm_kafka_compat.topology.tuples import StormTuple

__all__ = ["OwnWordCount", "WordScheme", "measure", "quickstart_src"]

WORDS = ("dog", "cat", "zebra", "elephant", "the", "a", "moose")


class OwnWordCount(BasicBolt):
    """The quickstart's WordCountBolt written against this project's API."""

    def prepare(self, conf: Any, context: Any) -> None:
        self.counter: Counter[str] = Counter()
        self.total = 0

    def declare_output_fields(self) -> List[str]:
        return ["word", "count"]

    def execute(self, tup: StormTuple, collector: BasicOutputCollector) -> None:
        word = tup.values[0]
        inc = 10 if word == "dog" else 1
        self.counter[word] += inc
        self.total += inc
        collector.emit([word, self.counter[word]])


def sink(tup: StormTuple) -> None:
    """The downstream task: takes the count (acked on return)."""


class WordScheme:
    """One ``word`` per message (the quickstart spout's field)."""

    fields: Tuple[str, ...] = ("word",)

    def to_tuples(self, message: MessageLike) -> List[List[Any]]:
        value = message.value
        return [] if value is None else [[value.decode()]]


def quickstart_src() -> Optional[str]:
    """The ``src`` directory of the quickstart project in the streamparse wheel, or None."""
    spec = importlib.util.find_spec("streamparse")
    if spec is None or spec.origin is None:
        return None
    return os.path.join(os.path.dirname(spec.origin), "bootstrap", "project", "src")


def _spec(kind: str, src: str) -> Dict[str, Any]:
    count: Dict[str, Any] = {"name": "count",
                             "inputs": [{"from": "spout", "grouping": "fields",
                                         "fields": ["word"]}]}
    if kind == "own":
        count["bolt"] = f"{__name__}:OwnWordCount"
    elif kind == "streamparse":
        count["bolt"] = "bolts.wordcount:WordCountBolt"
    else:
        count.update(shell=[sys.executable, "-m", "streamparse.run",
                            "bolts.wordcount.WordCountBolt"],
                     resources=src, output_fields=["word", "count"])
    return {"bolts": [count, {"name": "sink", "bolt": f"{__name__}:sink",
                              "inputs": [{"from": "count"}]}]}


def measure(tuples: int = 20000, rounds: int = 3,
            kinds: tuple[str, ...] = ("own", "streamparse", "multilang")) -> Dict[str, float]:
    """Microseconds per input tuple for each way (see the module docstring)."""
    src = quickstart_src()
    if src is None:
        raise RuntimeError("streamparse is not installed: pip install "
                           "'storm-kafka-compat[streamparse]'")
    if src not in sys.path:
        sys.path.insert(0, src)
    messages = [KafkaMessage(i, None, WORDS[i % len(WORDS)].encode(), 0, 0, (), "words", 0)
                for i in range(tuples)]
    out: Dict[str, float] = {}
    for kind in kinds:
        runtime = LocalRuntime(from_spec(_spec(kind, src)), {}, spout_fields=WordScheme.fields)
        try:
            best = float("inf")
            for _ in range(rounds):
                start = time.perf_counter()
                result = process_batch(messages, scheme=WordScheme(), topology=runtime,
                                       plan_filter=FetchPlan.at(0))
                best = min(best, time.perf_counter() - start)
                if result.acked != [(0, tuples)]:
                    raise RuntimeError(f"{kind}: not every tuple was acked: {result.acked} "
                                       f"failed {result.failed[:5]} errors {result.errors}")
            out[kind] = best / tuples * 1e6
        finally:
            runtime.cleanup()
    return out


if __name__ == "__main__":  # python -m storm_kafka_compat.workshop.bench.python_bolts [tuples]
    figures = measure(int(sys.argv[1]) if len(sys.argv) > 1 else 20000)
    for name, us in figures.items():
        print(f"{name:12s} {us:8.2f} us/tuple  ({us / figures['own']:.2f}x own)")
