"""S3 and S3-compatible endpoints: the store, its lean wire protocol, error mapping, object properties, client set-up, SigV4."""
