"""``python -m benchmarks``: the course's settings measured against Spark's and the machine's floor.

See benchmarks/__main__.py for the command and docs/PERFORMANCE.md for the results.
"""
