"""``migrate plan``: is it safe to start the job on a Storm topology's offsets? No writes.

Against the live ZooKeeper and Kafka it gathers, for the CONFIG:

* what a start would do per partition: the decision of ``offsets explain``
  (:func:`storm_kafka_compat.tools.explain.explain`, or ``explain_group`` for a
  Kafka-store job), never re-derived here;
* the lag (:func:`storm_kafka_compat.tools.lag.lag`);
* every spout id under the CONFIG's ``zkRoot`` with its documents' offsets and the last
  time one was written (:func:`~storm_kafka_compat.offsets.spout_ids.ids_under_root`),
  so that an operator whose ``id`` does not match finds the one Storm used;
* whether someone still writes: the documents (or the group's commits) are read twice,
  ``watch_s`` apart, and any that changed are named;
* the traps of the CONFIG (:mod:`storm_kafka_compat.config.traps`);

and one verdict: "safe to start", or each thing that is not.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.config.traps import Trap, TrapFacts, find_traps
from storm_kafka_compat.offsets.paths import spout_root
from storm_kafka_compat.offsets.spout_ids import (SpoutIdDocuments, holding, ids_under_root,
                                                  other_ids_problem, topic_matcher)
from storm_kafka_compat.offsets.store import SpoutListing
from storm_kafka_compat.tools import ToolEnv, document_versions
from storm_kafka_compat.tools.lag import LagRow, lag

#: decisions of ``offsets explain`` that do not resume from the stored offset
_NOT_RESUMING = {"ignore_zk_offsets": "would ignore the stored offset (ignoreZkOffsets)",
                 "max_offset_behind": "would reset a stored offset that is too far behind "
                                      "(maxOffsetBehind), skipping messages",
                 "invalid_state": "would find an unusable document",
                 "first_poll_strategy": "would override the Storm topology's commit "
                                        "(firstPollOffsetStrategy)",
                 "out_of_range": "would find a commit outside the log"}
SAFE = "safe to start"


@dataclass
class MigrationPlan:
    """What ``migrate plan`` found; ``problems`` empty means safe to start."""

    location: str                      # zkRoot/id, or the consumer group
    topology_id: str
    decisions: List[Any]               # Explanation or GroupExplanation
    lag: List[LagRow]
    other_ids: List[SpoutIdDocuments]
    changed: List[str]                 # documents (or partitions) written during the watch
    watch_s: float
    traps: List[Trap]
    problems: List[str] = field(default_factory=list)
    #: the CONFIG's topic (a regex in wildcard mode) and whether a topic name is one of it
    topic: str = ""
    matches: Callable[[str], bool] = lambda _name: True

    @property
    def safe(self) -> bool:
        return not self.problems

    @property
    def verdict(self) -> str:
        if self.safe:
            return f"{SAFE}: every partition resumes or starts as shown; nobody wrote during " \
                   f"the {self.watch_s:g} s watch"
        return "NOT safe to start: " + "; ".join(self.problems)

    def as_dict(self) -> Dict[str, Any]:
        return {"location": self.location, "topology_id": self.topology_id,
                "partitions": [d.as_dict() for d in self.decisions],
                "lag": {f"{r.topic}/{r.partition}": r.lag for r in self.lag},
                "other_ids": [d.as_dict() for d in self.other_ids],
                "changed_during_watch": self.changed, "watch_s": self.watch_s,
                "traps": [t.as_dict() for t in self.traps], "safe": self.safe,
                "problems": self.problems, "verdict": self.verdict}


def plan_migration(env: ToolEnv, *, watch_s: float = 5.0, topology_id: Optional[str] = None,
                   sleep: Callable[[float], None] = time.sleep) -> MigrationPlan:
    """Gather the plan (reads only) and judge it.

    Parameters
    ----------
    env : ToolEnv
    watch_s : float
        How long to watch the documents for a writer still at work (0: no watch).
    topology_id : str, optional
        The id a run would write (default: as the pipeline computes it).
    sleep : callable
        Injected for tests.
    """
    from storm_kafka_compat.runtime import topology_instance_id
    from storm_kafka_compat.tools.explain import explain, explain_group
    tid = topology_id or topology_instance_id(env.job)
    traps = find_traps(TrapFacts.from_job(env.job))
    if env.kafka_store:
        decisions: List[Any] = explain_group(env, topology_id=tid)
        location = f"consumer group {env.group_id}"
        before = _group_commits(env)
        other: List[SpoutIdDocuments] = []
    else:
        decisions = explain(env, topology_id=tid)
        spout = env.job.spout
        if spout.zk_root is None or spout.id is None:
            raise ConfigError("migrate plan needs spout.zkRoot and spout.id (where the "
                              "documents are)", key="spout")
        location = spout_root(spout.zk_root, spout.id)
        wildcard = env.job.topology.wildcard_match
        listed = (ids_under_root(env.store, spout.zk_root, wildcard=wildcard)
                  if isinstance(env.store, SpoutListing) else [])
        other = [d for d in listed if d.spout_id != spout.id]
        watched = [d.zk_path for d in decisions] + [p for d in other for p in d.offsets]
        before = document_versions(env.store, watched)
    if watch_s > 0:
        sleep(watch_s)
    after = _group_commits(env) if env.kafka_store else document_versions(env.store,
                                                                             list(before))
    changed = [key for key in before if before[key] != after.get(key)] + \
        [key for key in after if key not in before]
    plan = MigrationPlan(location, tid, decisions, lag(env), other, changed, watch_s, traps,
                         topic=env.job.spout.topic, matches=topic_matcher(env.job.spout.topic,
                                                     env.job.topology.wildcard_match))
    plan.problems = _problems(plan, env.kafka_store)
    return plan


def _group_commits(env: ToolEnv) -> Dict[str, Any]:
    return {f"{s.topic}/{s.partition}": s.committed
            for s in env.group_states(with_log=False)}


def _problems(plan: MigrationPlan, kafka_store: bool) -> List[str]:
    out: List[str] = []
    if plan.changed:
        shown = ", ".join(plan.changed[:3]) + (f" and {len(plan.changed) - 3} more"
                                                if len(plan.changed) > 3 else "")
        out.append(f"{len(plan.changed)} offset(s) changed during the {plan.watch_s:g} s watch "
                   f"({shown}): the Storm topology (or another job) still commits; stop it "
                   f"(storm deactivate, wait, storm kill) and plan again")
    resuming = [d for d in plan.decisions if d.decision in ("resume", "resume_foreign")]
    if not kafka_store and not resuming and not any(d.stored is not None for d in plan.decisions):
        same_topic = holding(plan.other_ids, plan.matches)
        if same_topic:
            out.append(other_ids_problem(plan.location, plan.topic, same_topic))
        else:
            elsewhere = (f" ({len(plan.other_ids)} other id(s) hold offsets of other topics)"
                         if plan.other_ids else "")
            out.append(f"no document under {plan.location} nor any other id under its root"
                       f"{elsewhere}: every partition starts at startOffsetTime; check zkRoot, "
                       f"id and the offsets' ZooKeeper (spout.zkServers)")
    by_decision: Dict[str, List[str]] = {}
    for d in plan.decisions:
        if d.decision in _NOT_RESUMING:
            by_decision.setdefault(d.decision, []).append(f"{d.topic}/{d.partition}")
    for decision, parts in by_decision.items():
        out.append(f"{len(parts)} partition(s) ({', '.join(parts[:4])}"
                   f"{', ...' if len(parts) > 4 else ''}) {_NOT_RESUMING[decision]}: "
                   f"see `offsets explain`")
    return out
