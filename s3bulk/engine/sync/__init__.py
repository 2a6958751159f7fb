"""Sync: the march over two sorted listings, the comparison of each pair, the local hash cache."""
