"""What users write: tuples, schemes, bolts, the topology builder, the acker."""
