"""Views: functions that turn plain data into output text or a rich renderable, for the command line.

They print nothing; the cli modules print or write what they return. Measure-layer objects (a VRAM
recording, a watch frame, a tune plan) are taken duck-typed: report must not import measure or cli.
"""
