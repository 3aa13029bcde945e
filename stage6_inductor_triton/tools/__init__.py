"""The `minidynamo` command (cli.py) and its tour of all six stages (tour.py)."""
