"""``tpsviz demo-data``: write the synthetic demo logs again (byte-identical, :mod:`tpsviz.synthetic.demo`)."""

from __future__ import annotations

from tpsviz.synthetic.demo import write_demo

__all__ = ["add_arguments", "run"]


def add_arguments(p) -> None:
    """``--out FOLDER``."""
    p.add_argument("--out", default="demo_data", help="output folder (default demo_data)")


def run(args) -> int:
    """Write the demo files and print their paths."""
    for path in write_demo(args.out):
        print(path)
    return 0
