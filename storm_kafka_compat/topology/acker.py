"""Storm's acker as data: tuple trees tracked by XOR-ing 64-bit ids per root.

How it works (Storm's "Guaranteeing message processing" and acker design):

* the spout gives each tracked message a random 64-bit **root id**; each copy
  of a tuple sent to a task gets a random 64-bit **edge id**; the spout sends
  ``init(root, XOR of the edge ids, msg id)``;
* a bolt emitting a tuple anchored to input ``a`` draws a new edge id per
  copy, XORs it into ``a``'s ``ack_val`` and records it in the child's anchors;
* a bolt acking ``a`` sends, for each root of ``a``, ``a``'s edge id XOR
  ``a.ack_val`` (the ids of its children); failing ``a`` sends ``fail(root)``;
* every edge id therefore enters the root's value exactly twice (created, then
  acked): the value returns to 0 exactly when the whole tree is acked. A
  tuple's ack carries its children's ids, so the value cannot reach 0 early.

Messages may arrive in any order (an ack before its init): entries are
created lazily and complete only once the init has been seen.

Timeouts follow the spout side of Storm: its pending map is a ``RotatingMap``
with two buckets rotated every T (``topology.message.timeout.secs``), so a
tuple expires between T and 2T after it was emitted (or last had its timeout
reset). ``Acker(exact_timeout=True)`` expires at exactly T instead. After a
timeout the entry is gone and late acks or fails for the root are ignored.

In the distributed case each Spark stage returns ``(root, xor)`` pairs; the
driver folds them with :func:`xor_by_root` and feeds them to :meth:`Acker.ack`.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from typing import Any, Dict, Hashable, Iterable, List, Mapping, Optional, Tuple

logger = logging.getLogger(__name__)

__all__ = ["Acker", "AckEntry", "xor_by_root", "new_id", "MASK64"]

MASK64 = (1 << 64) - 1


def new_id(rng: random.Random) -> int:
    """A random non-zero 64-bit id (zero would be invisible to the XOR)."""
    value = rng.getrandbits(64)
    while value == 0:
        value = rng.getrandbits(64)
    return value



def xor_by_root(pairs: Iterable[Tuple[int, int]]) -> Dict[int, int]:
    """Fold ``(root, value)`` pairs into root -> XOR of its values.

    XOR is associative and commutative, so partial folds from several Spark
    tasks can be folded again in any order.
    """
    out: Dict[int, int] = {}
    get = out.get
    for root, value in pairs:
        out[root] = get(root, 0) ^ value
    return out


@dataclass
class AckEntry:
    """What the acker keeps per root (Storm's ``AckObject`` plus the spout's
    pending ``TupleInfo``).

    Attributes
    ----------
    ack_val : int
        XOR of everything received for the root; 0 when the tree is complete.
    msg_id : Any
        The spout message id (the Kafka offset for this project).
    start_ms : int
        When the spout emitted the root (ms); None until the init arrived.
    failed : bool
        A tuple of the tree was explicitly failed.
    initialized : bool
        The spout's init has been seen.
    touched : int
        Timeout reference: the time of the emit or of the last reset (ms).
    """

    __slots__ = ("ack_val", "msg_id", "start_ms", "failed", "initialized", "touched")

    ack_val: int
    msg_id: Any
    start_ms: Optional[int]
    failed: bool
    initialized: bool
    touched: int


class Acker:
    """Tracks tuple trees per root id and reports completed and failed spout messages.

    Parameters
    ----------
    rng : random.Random, optional
        Source of root and edge ids (inject a seeded one in tests).
    exact_timeout : bool
        False (default): Storm's two-bucket expiry, between T and 2T.
        True: expire exactly T after the emit or the last reset.
    """

    def __init__(self, rng: Optional[random.Random] = None, *, exact_timeout: bool = False) -> None:
        self.rng = rng if rng is not None else random.Random()
        self.exact_timeout = exact_timeout
        # insertion order == timeout order (re-inserted on reset), so expiry scans a prefix
        self._entries: Dict[int, AckEntry] = {}
        self._completed: List[Tuple[Any, int]] = []
        self._failed: List[Tuple[Any, str]] = []
        self._origin_ms: Optional[int] = None
        self._last_now: Optional[int] = None

    # --- ids -------------------------------------------------------------------
    def new_root_id(self) -> int:
        """A fresh random 64-bit root id."""
        return new_id(self.rng)

    def new_edge_id(self) -> int:
        """A fresh random 64-bit edge id."""
        return new_id(self.rng)

    # --- the acker's messages -------------------------------------------------------
    def init(self, root_id: int, xor_of_edge_ids: int, msg_id: Any, now_ms: int) -> None:
        """The spout emitted ``root_id`` (``__ack_init``): XOR of the edge ids of
        every copy it sent. A value of 0 (no subscriber) completes at once."""
        entries = self._entries
        entry = entries.get(root_id)
        if self._origin_ms is not None and now_ms >= self._last_now:  # type: ignore[operator]
            self._last_now = touched = now_ms                          # the common case
        else:
            touched = self._touch_key(now_ms)
        if entry is None:
            if xor_of_edge_ids == 0:
                self._completed.append((msg_id, 0))
                return
            entries[root_id] = AckEntry(xor_of_edge_ids, msg_id, now_ms, False, True, touched)
            return
        else:  # acks or a fail arrived first
            entry.ack_val ^= xor_of_edge_ids
            entry.msg_id = msg_id
            entry.start_ms = now_ms
            entry.initialized = True
            entry.touched = touched
            del self._entries[root_id]
            self._entries[root_id] = entry
        self._settle(root_id, entry, now_ms)

    def ack(self, root_id: int, value: int, now_ms: Optional[int] = None) -> None:
        """``__ack_ack``: XOR ``value`` (a tuple's edge id XOR its children's ids)
        into the root."""
        entry = self._entries.get(root_id)
        if entry is None:
            # ack before init, or a late ack after a timeout (then never completed)
            self._entries[root_id] = AckEntry(value, None, None, False, False,
                                              self._touch_key(now_ms))
            return
        entry.ack_val ^= value
        if entry.initialized and (entry.ack_val == 0 or entry.failed):
            self._settle(root_id, entry, now_ms)

    def ack_many(self, folded: Mapping[int, int], now_ms: Optional[int] = None) -> None:
        """Apply a :func:`xor_by_root` fold."""
        for root_id, value in folded.items():
            self.ack(root_id, value, now_ms)

    def fail(self, root_id: int) -> None:
        """``__ack_fail``: a tuple of the tree failed; the root fails as soon as
        its init is known."""
        entry = self._entries.get(root_id)
        if entry is None:
            self._entries[root_id] = AckEntry(0, None, None, True, False, self._touch_key(None))
            return
        entry.failed = True
        self._settle(root_id, entry, None)

    def reset_timeout(self, root_id: int, now_ms: int) -> None:
        """``__ack_reset_timeout``: postpone the root's expiry as if emitted now."""
        entry = self._entries.pop(root_id, None)
        if entry is None:
            return
        entry.touched = self._touch_key(now_ms)
        self._entries[root_id] = entry

    def _settle(self, root_id: int, entry: AckEntry, now_ms: Optional[int]) -> None:
        if not entry.initialized:
            return
        if entry.failed:
            del self._entries[root_id]
            self._failed.append((entry.msg_id, "failed"))
        elif entry.ack_val == 0:
            del self._entries[root_id]
            start = entry.start_ms or 0
            self._completed.append((entry.msg_id, (now_ms - start) if now_ms is not None else 0))

    # --- timeouts ---------------------------------------------------------------------
    def _touch_key(self, now_ms: Optional[int]) -> int:
        """The entry's timeout reference: the time of its emit or last reset (ms)."""
        if now_ms is None:
            return self._last_now if self._last_now is not None else 0
        if self._origin_ms is None:
            self._origin_ms = now_ms
        if self._last_now is None or now_ms > self._last_now:
            self._last_now = now_ms
        return now_ms

    def expire(self, now_ms: int, timeout_ms: int) -> List[Any]:
        """Fail every root that timed out by ``now_ms``; returns their msg ids.

        Bucket mode (default): the pending map rotates every ``timeout_ms``,
        counted from the first time the acker saw; a root expires at the second
        rotation after its emit or reset, i.e. between T and 2T later. Exact
        mode: T after. Roots whose init never arrived (stray or late acks) are
        dropped silently.
        """
        self._touch_key(now_ms)
        if timeout_ms <= 0:
            return []
        expired_keys = []
        if self.exact_timeout:
            deadline = now_ms - timeout_ms
            for root_id, entry in self._entries.items():
                if entry.touched > deadline:
                    break
                expired_keys.append(root_id)
        else:
            origin = self._origin_ms if self._origin_ms is not None else now_ms
            limit = (now_ms - origin) // timeout_ms - 2
            for root_id, entry in self._entries.items():
                if (entry.touched - origin) // timeout_ms > limit:
                    break
                expired_keys.append(root_id)
        timed_out: List[Any] = []
        for root_id in expired_keys:
            entry = self._entries.pop(root_id)
            if entry.initialized:
                timed_out.append(entry.msg_id)
                self._failed.append((entry.msg_id, "timeout"))
        if timed_out:
            logger.debug("%d tuple trees timed out after %d ms", len(timed_out), timeout_ms)
        return timed_out

    # --- results ------------------------------------------------------------------------
    def completed(self) -> List[Tuple[Any, int]]:
        """Drain ``(msg_id, complete latency ms)`` of the trees fully acked."""
        out, self._completed = self._completed, []
        return out

    def failed(self) -> List[Tuple[Any, str]]:
        """Drain ``(msg_id, reason)`` of failed roots; reason ``"failed"`` or ``"timeout"``."""
        out, self._failed = self._failed, []
        return out

    def pending(self) -> List[Tuple[int, Any]]:
        """``(root_id, msg_id)`` of the initialized roots still in flight."""
        return [(r, e.msg_id) for r, e in self._entries.items() if e.initialized]

    def drop_pending(self) -> List[Any]:
        """Forget every entry; returns the msg ids of the initialized ones."""
        ids = [e.msg_id for e in self._entries.values() if e.initialized]
        self._entries.clear()
        return ids

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, root_id: Hashable) -> bool:
        return root_id in self._entries
