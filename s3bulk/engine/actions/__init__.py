"""The verbs beside copy and sync: deletes (`rm`), listing and sizes (`ls`, `du`), object versions."""
