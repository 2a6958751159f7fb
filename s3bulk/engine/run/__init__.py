"""A run: the workers (processes, a thread or a cluster) behind one handle protocol, the coordinator's loop, one worker's event loop."""
