"""What the user asked for, checked: URLs and each side's S3 options, sizes, filters, object-property options."""
