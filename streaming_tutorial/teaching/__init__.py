"""The teaching machinery: how a lesson shows what Spark does, not how the query is written.

Narration (banners, paragraphs, tables), replays of a query on hand-made input one
micro-batch at a time, the lateness tables and pictures, and readers of a checkpoint and of
state. A lesson's streams are never here: they are written out in the lesson.
"""
