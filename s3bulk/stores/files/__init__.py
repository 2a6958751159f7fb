"""Files on this machine, as the local store and the engine both need them: part files kept for
a resume, range sinks, request bodies read from files, and the landing of temporary files.

Not an adapter: the engine may import this package (pyproject's forbidden contract keeps it off
stores/local, stores/s3, stores/memory and stores/listget), and the local and S3 stores build on it."""
