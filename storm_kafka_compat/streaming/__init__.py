"""Spark front ends: the Structured Streaming source and the DataFrame mode."""
