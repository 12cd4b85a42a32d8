"""A pystorm bolt run as its own process (Storm's way): speaks JSON multilang."""
from pystorm import Bolt


class Split(Bolt):
    def process(self, tup):
        for word in tup.values[0].split():
            self.emit([word])


if __name__ == "__main__":
    Split().run()
