"""core.trajectory_sums, the one function that sums a log's step rows per run in memory, against a
plain loop over runs and steps (scores by numerical integration); and TPS_i = ℓ·A1 + (1 − ℓ)·A0."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import integrate

from tpsviz import Schedule, from_frame
from tpsviz.core.trajectory_sums import RunRows, trajectory_sums


def quad_score(p, y, a, b):
    """The Schervish integral by quadrature (bounded cases only)."""
    if y == 1:
        return -integrate.quad(lambda c: c ** (a - 1) * (1 - c) ** b, p, 1, epsrel=1e-12)[0]
    return -integrate.quad(lambda c: c ** a * (1 - c) ** (b - 1), 0, p, epsrel=1e-12)[0]


def _log(seed=5):
    """Censored runs, missing forecasts, forecasts at 0 and 1 (clipped), weights with zeros."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(30):
        cens = i % 3 == 0
        y = None if cens else int(rng.random() < 0.5)
        for k in range(int(rng.integers(1, 7))):
            p = rng.choice([np.nan, 0.0, 1.0, rng.random(), rng.random()])
            rows.append({"trajectory_id": f"r{i:02d}", "step": k + 1, "outcome": y, "censored": cens,
                         "conf_a": p, "weight": float(rng.integers(0, 3))})
    return pd.DataFrame(rows)


def _loop(df, need1, need0, a, b, eps, ids):
    """Per run (in ``ids`` order): A1, A0 (NaN where not needed or no forecast), W, present, clipped, last."""
    out = {k: [] for k in ("a1", "a0", "wsum", "n_present", "n_clipped", "last")}
    for i, tid in enumerate(ids):
        g = df[df.trajectory_id == tid].sort_values("step")
        if not (need1[i] or need0[i]):
            for k, v in zip(out, (np.nan, np.nan, 0.0, 0, 0, np.nan)):
                out[k].append(v)
            continue
        s1 = s0 = w_sum = 0.0
        n = n_clip = 0
        last = np.nan
        for _, r in g.iterrows():
            p = r["conf_a"]
            if math.isnan(p):
                continue
            n += 1
            n_clip += p < eps or p > 1 - eps
            last = p
            pc = min(max(p, eps), 1 - eps)
            w = r["weight"]
            w_sum += w
            s1 += w * quad_score(pc, 1, a, b) if need1[i] else 0.0
            s0 += w * quad_score(pc, 0, a, b) if need0[i] else 0.0
        out["a1"].append(s1 if need1[i] and n else np.nan)
        out["a0"].append(s0 if need0[i] and n else np.nan)
        for k, v in zip(("wsum", "n_present", "n_clipped", "last"), (w_sum, n, n_clip, last)):
            out[k].append(v)
    return out


@pytest.mark.parametrize("ab", [(1.0, 1.0), (2.0, 0.5)])
@pytest.mark.parametrize("need", ["outcome", "label q", "complete-case"])
def test_sums_against_a_loop(ab, need):
    a, b = ab
    df = _log()
    data = from_frame(df)
    t = data.trajectories
    cens = t["censored"].to_numpy(dtype=bool)
    y = t["outcome"].to_numpy(dtype=float)
    if need == "outcome":  # the engines' sums: A1 where the run can end in success, A0 in failure
        need1, need0 = cens | (y == 1), cens | (y == 0)
    elif need == "label q":  # a label per run: q = 0, 1 or in between on censored runs
        label = np.where(cens, np.resize([0.0, 0.4, 1.0], len(t)), y)
        need1, need0 = label > 0, label < 1
    else:
        need1, need0 = ~cens & (y == 1), ~cens & (y == 0)
    rows = RunRows.of(data, need1, need0, Schedule("column"))
    got = trajectory_sums(data.forecasts("a"), rows, a, b, 1e-6)
    want = _loop(df, need1, need0, a, b, 1e-6, t["trajectory_id"].to_numpy())
    for k, v in want.items():
        np.testing.assert_allclose(getattr(got, k), np.asarray(v, dtype=float), rtol=1e-9, atol=1e-12,
                                   err_msg=k)
    # every case is exercised: both branches, clipped and missing forecasts, zero weights
    assert not np.isnan(want["a1"]).all() and not np.isnan(want["a0"]).all()
    assert got.n_clipped.sum() > 0 and df["conf_a"].isna().any() and (df["weight"] == 0).any()


def test_row_scores_add_up_to_the_sums_and_mix_by_label():
    """The row scores the sums add up: Σ w·S(F, 1) over a run's rows is A1; where ℓ is a q_Z the row
    score is ℓ·S(F, 1) + (1 − ℓ)·S(F, 0), whose weighted sum is ℓ·A1 + (1 − ℓ)·A0."""
    df = _log(7)
    data = from_frame(df)
    t = data.trajectories
    cens = t["censored"].to_numpy(dtype=bool)
    label = np.where(cens, 0.3, t["outcome"].to_numpy(dtype=float))
    rows = RunRows.of(data, label > 0, label < 1, Schedule("column"))
    got = trajectory_sums(data.forecasts("a"), rows, 1.0, 1.0, 1e-6, keep_rows=True)
    s = got.rows.expected(rows, label)
    codes, w = data.steps["traj"].to_numpy(), data.steps["weight"].to_numpy()
    p = np.clip(data.forecasts("a"), 1e-6, 1 - 1e-6)
    for i in range(len(t)):
        m = (codes == i) & ~np.isnan(p)
        if not m.any():
            continue
        ell = label[i]
        want = [ell * quad_score(x, 1, 1, 1) + (1 - ell) * quad_score(x, 0, 1, 1) for x in p[m]]
        np.testing.assert_allclose(s[m], want, rtol=1e-9, atol=1e-12)
        tps = (ell * got.a1[i] if ell > 0 else 0.0) + ((1 - ell) * got.a0[i] if ell < 1 else 0.0)
        assert np.sum(w[m] * s[m]) == pytest.approx(tps, rel=1e-9, abs=1e-12)
