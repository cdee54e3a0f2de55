"""A known mistake: every reading older than the previous batch's watermark dropped, r7 too."""

PREDICTION = [[], [], [], [7, 8], [10]]
