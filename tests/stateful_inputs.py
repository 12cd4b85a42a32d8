"""Known inputs for stateful topologies and the truth computed from them in Python.

The Storm reference (:mod:`tests.peers.storm_topologies`) and the project's own
stateful jobs read the same topic; both are checked against what these functions
compute, so they can be compared with each other as well::

    lines = sentences(2000, seed=7)
    cluster.produce(topic, as_messages(lines, partitions=4))
    assert storm_word_counts(cluster.bootstrap, topic, tmp_path) == word_counts(lines)

Everything is a pure function of its arguments (a seeded :class:`random.Random`), so
a failure is reproduced by its seed.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

#: the words sentences are made of: a fixed vocabulary of 40, drawn with Zipf-like
#: weights (the first word about 40 times as often as the last) so counts differ
VOCABULARY: Tuple[str, ...] = (
    "the", "cow", "jumped", "over", "moon", "an", "apple", "a", "day", "keeps",
    "doctor", "away", "four", "score", "and", "seven", "years", "ago", "snow", "white",
    "dwarfs", "i", "am", "at", "two", "with", "nature", "storm", "kafka", "spark",
    "stream", "bolt", "spout", "tuple", "offset", "broker", "topic", "count", "word",
    "éclair",
)

#: the keys of :func:`key_values`
KEYS: Tuple[str, ...] = tuple(f"k{i:02d}" for i in range(20))

#: (partition, key, value) as the project's producers take them
Message = Tuple[int, Optional[bytes], Optional[bytes]]


def sentences(n: int, seed: int, *, vocabulary: Sequence[str] = VOCABULARY,
              max_words: int = 12) -> List[str]:
    """``n`` sentences of 1 to ``max_words`` words from ``vocabulary``. Words are
    mostly separated by one space; about one gap in twenty is two spaces or a tab, and
    about one sentence in fifty has a leading or trailing space (whitespace-separated
    words, as a split bolt reads them)."""
    rng = random.Random(seed)
    weights = [1.0 / (rank + 1) for rank in range(len(vocabulary))]
    out = []
    for _ in range(n):
        words = rng.choices(vocabulary, weights, k=rng.randint(1, max_words))
        line = words[0]
        for word in words[1:]:
            gap = rng.random()
            line += ("  " if gap < 0.03 else "\t" if gap < 0.05 else " ") + word
        edge = rng.random()
        if edge < 0.01:
            line = " " + line
        elif edge < 0.02:
            line += " "
        out.append(line)
    return out


def word_counts(lines: Iterable[str]) -> Dict[str, int]:
    """word -> how many times it occurs in ``lines`` (split on whitespace)."""
    return dict(Counter(word for line in lines for word in line.split()))


def key_values(n: int, seed: int, *, keys: Sequence[str] = KEYS, low: int = -1_000_000,
               high: int = 1_000_000) -> List[str]:
    """``n`` lines ``"key,number"``: keys from ``keys`` (uniformly), numbers uniform in
    ``[low, high]`` (negative ones too)."""
    rng = random.Random(seed)
    return [f"{rng.choice(keys)},{rng.randint(low, high)}" for _ in range(n)]


def running_max(lines: Iterable[str]) -> Dict[str, int]:
    """key -> the largest number of its ``"key,number"`` lines."""
    out: Dict[str, int] = {}
    for line in lines:
        key, number = line.rsplit(",", 1)
        out[key] = max(out.get(key, int(number)), int(number))
    return out


def as_messages(lines: Sequence[str], partitions: int) -> List[Message]:
    """``lines`` as messages without keys, line ``i`` to partition ``i % partitions``
    (UTF-8 values), so partition ``p`` holds lines ``p, p + partitions, ...`` in order."""
    return [(i % partitions, None, line.encode("utf-8")) for i, line in enumerate(lines)]
