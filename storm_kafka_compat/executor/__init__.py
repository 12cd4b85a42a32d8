"""What a Spark task runs on an executor: the read, the scheme, the bolts and stage tasks,
the worker's parts built once per Python worker from the job's pure data, and the bolt
hosts that keep the bolt tasks' state."""
