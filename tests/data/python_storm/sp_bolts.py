"""streamparse bolts written as their users write them (for the compat tests)."""

from collections import Counter

from streamparse import BatchingBolt, Bolt, Stream, TicklessBatchingBolt


class SplitBolt(Bolt):
    outputs = ["word"]

    def process(self, tup):
        for word in tup.values.line.split():
            self.emit([word])


class RoutingBolt(Bolt):
    """Explicit acks and anchors, two streams, task ids asked for."""

    outputs = [Stream(fields=["word"], name="default"), Stream(fields=["bad"], name="errors")]
    auto_ack = False
    auto_anchor = False

    def initialize(self, conf, ctx):
        self.seen = 0
        self.task_ids = []

    def process(self, tup):
        self.seen += 1
        word = tup.values[0]
        if word == "fail":
            self.fail(tup)
            return
        stream = "errors" if word.startswith("x") else "default"
        self.task_ids.append(self.emit([word], stream=stream, anchors=[tup],
                                       need_task_ids=True))
        self.ack(tup)


class Boom(Bolt):
    outputs = ["word"]

    def process(self, tup):
        if tup.values[0] == "boom":
            raise ValueError("boom")
        self.logger.info("saw %s", tup.values[0])
        self.log("logged through log()")


class GroupCount(BatchingBolt):
    outputs = ["word", "count"]

    def group_key(self, tup):
        return tup.values[0]

    def process_batch(self, key, tups):
        self.emit([key, len(tups)])


class TimedGroupCount(TicklessBatchingBolt):
    outputs = ["word", "count"]
    secs_between_batches = 3600

    def group_key(self, tup):
        return tup.values[0]

    def process_batch(self, key, tups):
        self.emit([key, len(tups)])


class Totals(Bolt):
    outputs = []

    def initialize(self, conf, ctx):
        self.counts = Counter()

    def process(self, tup):
        self.counts[tup.values[0]] += tup.values[1] if len(tup.values) > 1 else 1
