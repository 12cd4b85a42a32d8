"""Split lines into words: a multilang module over Storm's storm.py, run by
``python -m word_count.split_words`` as Pyleus runs its bolt modules."""
import storm


class SplitWords(storm.BasicBolt):
    OUTPUT_FIELDS = ["word"]

    def process(self, tup):
        for word in tup.values[0].split():
            storm.emit([word])


if __name__ == "__main__":
    SplitWords().run()
