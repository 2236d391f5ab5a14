"""Outcomes beyond success/failure: multi-class TPS-k and continuous outcomes (CRPS, PIT).
Builds on ``core``, ``io`` and ``diagnostics``.
"""
