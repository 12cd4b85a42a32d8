"""What the Python Storm integration tests give the topologies they run: the scheme the
Kafka spout uses in place of the quickstart's WordSpout (one word per message, field
``word``), and the truth of the quickstart's WordCountBolt (``dog`` counts 10)."""

from __future__ import annotations

from collections import Counter
from typing import Dict, Iterable, List


def word(value: bytes) -> List[str]:
    """One message, one word: the field the quickstart's topology groups on."""
    return [value.decode("utf-8")]


word.fields = ("word",)  # type: ignore[attr-defined]


def quickstart_counts(words: Iterable[str]) -> Dict[str, int]:
    """What streamparse's quickstart WordCountBolt ends with: 1 a word, 10 for ``dog``."""
    out: Counter = Counter()
    for w in words:
        out[w] += 10 if w == "dog" else 1
    return dict(out)


class Keep:
    """A rich bolt that keeps what reaches it (class-wide, in this process) and acks."""

    kept: List[List[object]] = []

    def prepare(self, conf, context, collector):
        self.collector = collector

    def declare_output_fields(self):
        return ()

    def execute(self, tup):
        Keep.kept.append(list(tup.values))
        self.collector.ack(tup)
