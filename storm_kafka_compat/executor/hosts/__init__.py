"""Bolt hosts: one instance per bolt task for the life of the job.

In Storm a bolt task (component, task index) is one object in one executor: its
fields (a HashMap of counts, a window) are that task's state. Spark gives no such
home: a stage's partition runs in whichever Python worker is free, so a task's
instance would be copied into every worker and its state split. Here the bolt tasks
of the stages behind a crossing grouping (fields, global, all) live in bolt hosts:
processes owned by the driver, started with the run, each holding some of those tasks
prepared once (:class:`~storm_kafka_compat.executor.hosts.host.BoltHost`). A stage's Spark task
hands its tuples to the host of its bolt task and returns what the host gives back
(:mod:`.client`); what a batch costs does not grow with the state a task holds.

State and offsets are saved together (:mod:`.snapshots`): before each offset commit
the driver has every host save its tasks' state as of the batches whose acks that
commit reflects, tagged with the offsets about to be written; at start-up the state
whose offsets equal the stored ones is restored. So after a killed driver the job
resumes with the state as of the last commit and replays only what that commit did
not cover. A killed Python worker or executor does not touch the hosts: Spark runs the
stage's task again, and the host answers a task it already ran from what it kept
(nothing is applied twice).

What a crash can still do (documented in docs/bolts-and-acker.md):

* offsets failed and waiting for retry at a commit: the commit stays below them, the
  state holds the acked messages above them, and a restart replays those too (their
  effect on state is applied again, at-least-once as in Storm);
* a Spark job that fails whole after some hosts ran their part: its messages are
  replayed and the hosts apply them again;
* a host that dies (not the driver): the run stops with an error; the next start
  restores the last saved state.
"""
