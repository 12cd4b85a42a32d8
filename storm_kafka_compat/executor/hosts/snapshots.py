"""The bolt tasks' state on disk, each version tagged with the offsets it reflects.

One file per version, ``state-<txid>.pickle`` under the job's state directory, written
whole to a temporary name, flushed to disk, then renamed (a crash leaves the old
versions or the new one, never half of one). The driver writes a version before the
offset commit it goes with; at start-up :meth:`StateStore.matching` picks the newest
version whose offsets equal the offsets the spout starts from, so a crash between the
save and the commit falls back to the version before. Only the newest ``KEEP`` are kept.
"""

from __future__ import annotations

import logging
import os
import pickle
import re
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Tuple

from storm_kafka_compat.executor.hosts.host import Slot
from storm_kafka_compat.structs import TopicPartition

log = logging.getLogger(__name__)

#: versions kept on disk
KEEP = 3
_NAME = re.compile(r"^state-(\d+)\.pickle$")


def default_state_dir(zk_root: str, spout_id: str) -> Path:
    """``~/.local/state/storm-kafka-compat/<zkRoot>/<id>`` (XDG_STATE_HOME honoured)."""
    base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    parts = [p for p in zk_root.split("/") if p] + [spout_id]
    return base.joinpath("storm-kafka-compat", *parts)


class StateStore:
    """Versions of the bolt tasks' state under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def versions(self) -> List[int]:
        if not self.root.is_dir():
            return []
        found = [int(m.group(1)) for name in os.listdir(self.root)
                 for m in [_NAME.match(name)] if m]
        return sorted(found, reverse=True)

    def path(self, txid: int) -> Path:
        return self.root / f"state-{txid:012d}.pickle"

    def write(self, txid: int, offsets: Mapping[TopicPartition, int],
              saved: Mapping[Slot, bytes]) -> Path:
        """Write version ``txid``: ``saved`` state as of ``offsets`` (the offsets that
        the commit after it writes: next offset to process per partition)."""
        self.root.mkdir(parents=True, exist_ok=True)
        final = self.path(txid)
        tmp = final.with_suffix(".tmp")
        body = {"txid": txid, "offsets": {(tp.topic, tp.partition): off
                                          for tp, off in offsets.items()},
                "state": dict(saved)}
        with open(tmp, "wb") as f:
            pickle.dump(body, f, protocol=pickle.HIGHEST_PROTOCOL)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
        for old in self.versions()[KEEP:]:
            self.path(old).unlink(missing_ok=True)
        return final

    def read(self, txid: int) -> Tuple[Dict[TopicPartition, int], Dict[Slot, bytes]]:
        with open(self.path(txid), "rb") as f:
            body = pickle.load(f)
        offsets = {TopicPartition(t, p): off for (t, p), off in body["offsets"].items()}
        return offsets, body["state"]

    def matching(self, offsets: Mapping[TopicPartition, int]
                 ) -> Tuple[Optional[int], Optional[Dict[Slot, bytes]], str]:
        """The newest version whose offsets equal ``offsets`` on every partition it
        names: (txid, state, why); (None, None, why) when none does."""
        versions = self.versions()
        if not versions:
            return None, None, f"no saved bolt state under {self.root}"
        tried = []
        for txid in versions:
            try:
                saved_offsets, state = self.read(txid)
            except Exception as exc:  # noqa: BLE001 - a damaged file: the one before
                log.warning("saved bolt state %s cannot be read (%s); trying the one before",
                            self.path(txid), exc)
                continue
            differ = {tp: (off, offsets.get(tp)) for tp, off in saved_offsets.items()
                      if offsets.get(tp) != off}
            if not differ:
                return txid, state, f"version {txid} matches the stored offsets"
            tried.append(f"{txid} ({', '.join(f'{tp} saved at {a}, stored {b}' for tp, (a, b) in sorted(differ.items())[:3])})")  # noqa: E501
        return None, None, ("no saved bolt state matches the stored offsets: " +
                            "; ".join(tried))
