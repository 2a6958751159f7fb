"""The local filesystem as a store: the store, kept part files, range sinks, request bodies from files, xattrs."""
