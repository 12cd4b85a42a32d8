"""storm.py's Bolt with explicit anchors, acks and fails, reportError, and an exit."""
import sys

import storm


class Explicit(storm.Bolt):
    def initialize(self, conf, context):
        self.component = context["componentid"]

    def process(self, tup):
        word = tup.values[0]
        if word == "die":
            sys.exit(3)
        if word == "fail":
            storm.reportError("asked to fail: " + word)
            storm.fail(tup)
            return
        storm.logInfo("%s got %s" % (self.component, word))
        tasks = storm.emit([word.upper()], anchors=[tup])
        storm.emit([str(tasks)], stream="tasks", anchors=[tup])
        storm.ack(tup)


Explicit().run()
