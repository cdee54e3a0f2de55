"""The course's exercises: a catalog of checks, the checker, progress, and the watch mode.

A learner uses it through ``python course.py exercises``; the pristine exercise files are in
``exercises/<lesson>/ex<N>_<name>/``, one folder per exercise: the stub, the reference
solution, the check (scenarios, hints, known mistakes), the expected output and the shipped
answers (``practice.catalog`` lists them).
"""
