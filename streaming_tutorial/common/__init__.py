"""Shared helpers for every lesson, simulator and test of the course.

Import the piece you need (``from common import paths``,
``from common.session import get_spark``). This file imports nothing heavy, so
tools that only need paths or the environment check work before pyspark is
installed.
"""
