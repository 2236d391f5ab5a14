"""Simulated agents with known truth (q_t and m_t): the demo data and the propriety tests.
Builds on ``tpsviz.core`` and ``tpsviz.io``.
"""
