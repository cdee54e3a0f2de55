"""What a learner reads beside the lessons: schemas, the session, configuration and paths.

The course's shared code is split by who reads it:

- ``common/``: what a lesson's query needs and a learner copies with it: the schemas, the
  SparkSession factory, ports and topic names, the folders, and the parsing with quarantine
  reasons that lesson 03 teaches and later lessons reuse.
- ``teaching/``: the machinery that makes a lesson a lesson: narration, replays of a query
  batch by batch, lateness tables and pictures, reading a checkpoint or state back.
- ``infra/``: the course's infrastructure: the run control every lesson shares, the command
  line, the simulators, the Kafka broker, environment checks and error advice.

Import the piece you need (``from common import paths``, ``from common.session import
get_spark``). This file imports nothing heavy, so tools that only need paths work before
pyspark is installed.
"""
