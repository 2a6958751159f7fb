"""Running a plan's work units as tasks on a Dask distributed cluster (`--cluster`)."""
