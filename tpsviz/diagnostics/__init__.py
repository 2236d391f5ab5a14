"""What is computed next to TPS: metrics, skill and the leaderboard, reliability, CORP
decomposition, Murphy diagrams, recalibration, the verdict with its caveats and claims,
comparisons of predictors and groups, censored populations and the Monte-Carlo audit.
Builds on ``core``, ``io`` and ``synthetic``.
"""
