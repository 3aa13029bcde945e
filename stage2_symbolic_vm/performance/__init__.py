"""Performance: the answers of meta runs, kept on disk between processes (`meta_cache.py`)."""
