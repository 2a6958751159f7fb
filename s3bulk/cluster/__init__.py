"""Running a plan's work units as tasks on a Dask distributed cluster (`--cluster`).

The engine knows a cluster only as a Runner (engine/run/handles.py); `runner_for(spec)` makes the
one for what the user gave: a scheduler address, "local[:N]" or a distributed.Client."""
