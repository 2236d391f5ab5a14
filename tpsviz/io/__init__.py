"""Reading logs: files and data roots, tables, the long format, datasets of files, sampled reads,
harness readers (tau2-bench, tau-bench, Inspect AI) and the multi-class and continuous readers.
Builds on ``tpsviz.core`` only.
"""
