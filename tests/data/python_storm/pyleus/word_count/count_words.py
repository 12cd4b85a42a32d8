"""Count words: a streamparse bolt module (runs in the bolt task's process)."""
from collections import Counter

from streamparse import Bolt


class CountWords(Bolt):
    outputs = ["word", "count"]

    def initialize(self, conf, ctx):
        self.counts = Counter()

    def process(self, tup):
        word = tup.values.word
        self.counts[word] += 1
        self.emit([word, self.counts[word]])


if __name__ == "__main__":
    CountWords().run()
