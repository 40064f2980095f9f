"""Measuring and fitting (never imported by the runtime): question sets, retrieval and quote reports, the verifier's calibration."""
