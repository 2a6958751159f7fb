"""`sync --watch`: keep DST equal to SRC after the first sync, from change events (feed.py)."""
