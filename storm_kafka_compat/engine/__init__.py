"""The Spark engine: executor tasks, stages, the driver loop."""
