"""The lean HTTP/1.1 client the S3 data path and the list/get store speak through."""
