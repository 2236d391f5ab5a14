"""The foundation: the beta family of scores, weight schedules, TPS with censoring, inference and
resampling, the data model (TrajectoryData), errors, names and number formatting. Imports nothing
else of tpsviz. ``_fast/`` is private machinery measured faster than the plain library call.
"""
