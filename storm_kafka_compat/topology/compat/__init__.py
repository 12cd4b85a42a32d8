"""Python Storm topologies run as they are: streamparse/pystorm bolts in the bolt task's
process (:mod:`.streamparse`), multilang scripts (Storm's ``storm.py``, ``ShellBolt``) as
subprocesses speaking Storm's protocol (:mod:`.multilang`, :mod:`.shell`)."""
