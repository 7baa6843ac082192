"""Guided tuning (`spec-doctor tune`): measure a baseline, change one thing at a time, stop where the
gain stops.

* :mod:`.plan`    the variants, derived from the user's command line (pure)
* :mod:`.server`  launching and always stopping a vLLM server on loopback
* :mod:`.decide`  early stopping, the budget, the recommendation, the concurrency crossover (pure)
* :mod:`.run`     the loop: each variant, each concurrency, load + /metrics counter deltas
* :mod:`.output`  per-variant reports (usable with `spec-doctor compare`), summary, table, plot
"""
