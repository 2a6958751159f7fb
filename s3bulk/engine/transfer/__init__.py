"""Moving one object: server-side, one read and one put, or in parts (spread over processes, written by sinks); pipes."""
