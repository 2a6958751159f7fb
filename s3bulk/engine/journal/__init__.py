"""The resume journals: work units and open uploads (copy, sync), key ranges (rm), versions; uploads left open and how they are found again."""
