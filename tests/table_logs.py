"""Logs for the tests of the verified table in SQL (test_scoretable.py, test_engines_dask.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tpsviz.core.scores import TABLE_MIN
from tpsviz.synthetic.agent import simulate


def table_sized_log(seed: int = 4) -> pd.DataFrame:
    """A synthetic log above TABLE_MIN rows (so a general (α, β) is scored by the verified
    table), with 1% of one predictor's forecasts at 0, 1, 1e-14, 1 − 1e-14 (off the table's
    grid) or missing."""
    d = simulate("tau2-like", n_trajectories=1700, seed=seed).to_data()
    df = d.steps[["trajectory_id", "step"]].copy()
    df["outcome"] = d.trajectories["outcome"].to_numpy()[d.steps["traj"].to_numpy()]
    for name in ("truthful", "verbal"):
        df[f"conf_{name}"] = d.forecasts(name)
    rng = np.random.default_rng(seed)
    edge = rng.choice([0.0, 1.0, 1e-14, 1 - 1e-14, np.nan], size=len(df))
    pick = rng.random(len(df)) < 0.01
    df.loc[pick, "conf_verbal"] = edge[pick]
    assert len(df) >= TABLE_MIN
    return df


def split_parquet(df: pd.DataFrame, folder: Path, parts: int) -> Path:
    """``df`` as ``parts`` Parquet files cut through runs (a run spans two files)."""
    folder.mkdir(parents=True, exist_ok=True)
    cuts = np.linspace(0, len(df), parts + 1).astype(int)
    for k in range(parts):
        df.iloc[cuts[k]:cuts[k + 1]].to_parquet(folder / f"part-{k}.parquet")
    return folder
