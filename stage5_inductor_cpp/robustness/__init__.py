"""The kernel cache when things go wrong: files that a crash, a full disk, another process
or a read-only home cannot leave half-written or wrong (cache_files.py)."""
