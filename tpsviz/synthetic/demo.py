"""The demo logs in ``demo_data/``, written byte-identically by every run (``python -m tpsviz demo-data``).

Every file there is written by this module except :data:`NOT_GENERATED` (the data card and a real
log copied as published), which it never writes or changes.

For each scenario of :data:`tpsviz.synthetic.agent.SCENARIOS`: the log, its hidden truth per run and,
where simulated, the rollouts; then the drifting deployment, the multi-class and the continuous-outcome
demos.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tpsviz.synthetic import continuous, drift, multiclass
from tpsviz.synthetic.agent import simulate

__all__ = ["write_demo", "EXTRA_DEMOS", "NOT_GENERATED"]

#: files of ``demo_data/`` this writer leaves alone: the data card, and a real public log copied as published
#: (demo_data/README.md, tests/fixtures/SOURCES.md), with the git blob hash that pins its bytes. The check
#: that the folder is the writer's own: ``diff -r -x README.md -x tau-bench-airline-gpt-4o.json OUT demo_data``
NOT_GENERATED = {"README.md": None,
                 "tau-bench-airline-gpt-4o.json": "a5f0d91569e740b949b37a181993b3f1822a86f4"}

#: modules with a demo_frames() -> {file name: frame}: the monitoring, multi-class and continuous demos
EXTRA_DEMOS = (drift, multiclass, continuous)


def _fmt_frame(df: pd.DataFrame) -> str:
    return df.to_csv(index=False, float_format="%.6g", lineterminator="\n")


def write_demo(out_dir, scenarios: tuple[str, ...] = ("tau2-like", "webshop-like"), extra: bool = True) -> list:
    """Write the demo logs (byte-identical on every run) and return the paths written.

    For each scenario: ``<name>.csv`` (the log), ``<name>_truth.csv`` (hidden truth per run)
    and, when the scenario simulates rollouts, ``<name>_rollouts.csv``.

    Parameters
    ----------
    out_dir : str or Path
        Folder to write into (created if missing).
    scenarios : tuple of str
        Keys of ``SCENARIOS``.
    extra : bool
        Also the files of :data:`EXTRA_DEMOS` (a drifting deployment, a multi-class and a
        continuous-outcome log).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    frames = {}
    for key in scenarios:
        sim = simulate(key)
        frames.update({f"{key}.csv": sim.steps, f"{key}_truth.csv": sim.truth})
        if len(sim.rollouts):
            frames[f"{key}_rollouts.csv"] = sim.rollouts
    for module in EXTRA_DEMOS if extra else ():
        frames.update(module.demo_frames())
    written = []
    for fname, frame in frames.items():
        path = out / fname
        path.write_text(_fmt_frame(frame), encoding="utf-8")
        written.append(path)
    return written
