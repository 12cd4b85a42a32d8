"""A multilang bolt as Storm's own examples write them: storm.py's BasicBolt, run by a
ShellBolt("python", "splitsentence.py"). storm.py comes from Storm's multilang-python jar
(put beside this file by the tests; never committed)."""
import storm


class SplitSentence(storm.BasicBolt):
    def process(self, tup):
        for word in tup.values[0].split():
            storm.emit([word])


SplitSentence().run()
