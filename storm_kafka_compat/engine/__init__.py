"""The Spark engine: the driver loop, the runners, and what runs on the executors
(the job the workers get once, the partition reader, the tasks and stages)."""
