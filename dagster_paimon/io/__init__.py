"""Data files: the key-value layout, reading a sorted run, the rolling writer, paths, deletes."""
