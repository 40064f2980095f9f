"""Measuring and fitting, apart from the runtime: the quote and retrieval reports, the verifier's labelled claim sets
and calibration, and the writer of rag/tuned.py that the refit commands use."""
