"""The command line, ``python -m tpsviz``: one module per command. The top layer of the core.
"""
