"""Storm Flux topologies and .properties files converted into CONFIG."""
