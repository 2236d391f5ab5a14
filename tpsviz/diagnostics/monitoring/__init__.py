"""A deployed agent over time: TPS and skill in sliding windows with a CUSUM alarm, and the
hand-off (deferral) policy. Builds on ``core``, ``io`` and ``diagnostics``.
"""
