"""Listing: key-range work units, split listing, hints from the last run, spill to disk, manifests and S3 Inventory."""
