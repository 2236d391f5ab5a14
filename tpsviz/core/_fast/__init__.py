"""Private machinery kept because it beats the plain library call by more than 1.5×.

``bench/bench_machinery.py`` times each piece against the plain call doing the same job (issue
11, point 5); the plain paths stay in the public modules and are the tests' oracles:

- :mod:`.counts`: the bootstrap's resampling counts (exact Poisson stage and uniform top-up,
  two threads, a replay cache, tiled products). Plain path: ``resample.plain_counts``
  (``Generator.multinomial``).
- :mod:`.kernels`: beta-family scores over large arrays (blocks, two threads, closed forms of
  log and boosting, verified interpolation tables). Plain path: ``scores.plain_score``.
"""
