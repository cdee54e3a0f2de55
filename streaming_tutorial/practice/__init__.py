"""The course's exercises: a catalog of checks, the checker, progress, and the watch mode.

A learner uses it through ``python course.py exercises``; the pristine exercise files are in
``exercises/``, the reference solutions in ``exercises/solutions/``, the checks (scenarios,
expected outputs, hints, known mistakes) in ``exercises/checks/``.
"""
