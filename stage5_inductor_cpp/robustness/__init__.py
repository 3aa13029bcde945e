"""When things go wrong: what a crash, a full disk or a bug of ours must not turn into a
wrong answer.

cache_files.py     kernel files that a crash, a full disk, another process or a read-only
                   home cannot leave half-written or wrong
lowering_bugs.py   a lowering that disagrees with torch: an error in strict mode, else torch
"""
