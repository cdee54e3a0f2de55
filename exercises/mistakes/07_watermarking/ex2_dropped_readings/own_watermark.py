"""A known mistake: readings dropped by each batch's own watermark (the one that closes windows)."""

PREDICTION = [[], [], [], [7, 8], [10, 11]]
