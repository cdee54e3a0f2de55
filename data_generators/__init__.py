"""The course's data simulators: each file is a script you run in a second terminal.

They also import as ``data_generators.<name>`` (initial_setup.py and the tests use the
pure ``make_*`` functions to build sample data and test input).
"""
