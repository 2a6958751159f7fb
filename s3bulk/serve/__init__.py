"""`s3bulk serve`: a server for the plain list/get contract."""
