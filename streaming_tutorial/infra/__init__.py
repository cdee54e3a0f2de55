"""The course's infrastructure: what runs the lessons, not what they teach.

Run control (one session, bounded queries, a clean Ctrl-C), the one command line, the
simulators and the course's own Kafka broker, environment checks, and the advice printed for
an error a learner can cause. Helpers here that only need the standard library work before
pyspark is installed (``course.py`` uses them to set up).
"""
