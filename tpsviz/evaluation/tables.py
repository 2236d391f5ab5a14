"""An :class:`~tpsviz.evaluation.record.Evaluation` as tables of text cells: the leaderboard (the
visible columns and every column), the verdicts one row each, the leaderboard of the HTML report.

What the dashboard's Overview shows, the offline report embeds and a notebook displays are the
same cells, built here once from the Evaluation's frames (``summary``, ``skill``, ``metrics``,
``verdicts``); the numbers are written by :mod:`tpsviz.core.formatting`. A predictor's label is
``name(predictor)`` (default: as in the log; the dashboard and the report pass
``tpsviz.report.figures.display_name``, which marks the reference: plotly stays out of
``import tpsviz``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tpsviz.core import formatting as Fm
from tpsviz.core.inference import normal_quantile

__all__ = ["intervals", "interval_kind", "exact_01_counts", "leaderboard_table", "leaderboard_details",
           "report_table", "verdict_rows", "verdict_table"]


def intervals(ev) -> pd.DataFrame:
    """The interval of each predictor's mean TPS, in the log's order of predictors.

    The bootstrap CI where the summary has one (``how`` = ``"bootstrap"``), else mean ± z·SE at
    the settings' level (``"se"``: the bootstrap off, or points first on a large log), else NaN
    (``"none"``): :func:`tpsviz.core.inference.summary_interval` of every row at once.

    Parameters
    ----------
    ev : Evaluation

    Returns
    -------
    DataFrame
        Columns ``low``, ``high``, ``how``, indexed by predictor.
    """
    s = ev.summary
    nan = np.full(len(s), np.nan)
    lo, hi = (s[c].to_numpy(dtype=float) if c in s else nan for c in ("tps_ci_low", "tps_ci_high"))
    m, se = s["tps_mean"].to_numpy(dtype=float), s["tps_se"].to_numpy(dtype=float)
    boot = np.isfinite(lo) & np.isfinite(hi)
    normal = ~boot & np.isfinite(m) & np.isfinite(se)
    z = normal_quantile(ev.settings.level)
    with np.errstate(invalid="ignore"):
        low = np.where(boot, lo, np.where(normal, m - z * se, np.nan))
        high = np.where(boot, hi, np.where(normal, m + z * se, np.nan))
    how = np.where(boot, "bootstrap", np.where(normal, "se", "none")).astype(object)
    return pd.DataFrame({"low": low, "high": high, "how": pd.Series(how, index=s.index, dtype=object)}, index=s.index)


def interval_kind(ev) -> str:
    """``"bootstrap"`` when any predictor's interval is a bootstrap CI, else ``"se"`` when any is
    mean ± z·SE, else ``"none"`` (how the leaderboard's intervals were formed, for its caption).

    Parameters
    ----------
    ev : Evaluation

    Returns
    -------
    str
    """
    how = set(intervals(ev)["how"])
    return next((k for k in ("bootstrap", "se") if k in how), "none")


def exact_01_counts(data, predictors) -> dict:
    """Forecasts exactly 0 or 1 per predictor (under an unbounded score with ε = 0 they score −∞).

    Parameters
    ----------
    data : TrajectoryData
    predictors : iterable of str

    Returns
    -------
    dict
        Predictor → count.
    """
    out = {}
    for name in predictors:
        p = data.forecasts(name)
        out[name] = int(np.sum((p == 0) | (p == 1)))
    return out


def _row(frame: pd.DataFrame, name: str) -> pd.Series:
    return frame.loc[name] if name in frame.index else pd.Series(dtype=float)


def leaderboard_table(ev, name=str) -> pd.DataFrame:
    """The leaderboard's visible columns, best first (the Overview's table, the reports' first columns).

    The first four are what a narrow screen (a phone) shows without scrolling: who, the verdict, the
    skill and TPS (issue 46).

    Parameters
    ----------
    ev : Evaluation
    name : callable
        A predictor's label.

    Returns
    -------
    DataFrame
        ``predictor``, ``verdict`` (the label; empty where undecided: an Evaluation without its
        verdicts), ``skill`` (± SE), ``TPS``, ``95% CI`` (at the settings' level: :func:`intervals`),
        ``AUROC``, ``T-ECE``, ``n runs``, ``censored``, ``clipped`` (forecasts moved to [ε, 1 − ε];
        with ε = 0 the forecasts exactly 0 or 1 instead).
    """
    s, iv, ci = ev.summary, intervals(ev), f"{ev.settings.level:.0%} CI"
    zeros = exact_01_counts(ev.data, s.index) if ev.settings.eps == 0 else {}
    verdicts = ev.verdicts or {}
    rows = []
    for n in ev.order:
        r, k, m = s.loc[n], _row(ev.skill, n), _row(ev.metrics, n)
        rows.append({
            "predictor": name(n), "verdict": verdicts[n].label if n in verdicts else "",
            "skill": Fm.pm(k.get("skill", np.nan), k.get("skill_se", np.nan)),
            "TPS": Fm.num(r["tps_mean"]), ci: Fm.interval(iv.at[n, "low"], iv.at[n, "high"]),
            "AUROC": Fm.num(m.get("auroc", np.nan), ".3f"), "T-ECE": Fm.num(m.get("tece_pooled", np.nan), ".3f"),
            "n runs": int(r["n_trajectories"]), "censored": int(r["n_censored"]),
            "clipped": int(r["n_clipped"]) if ev.settings.eps > 0 else zeros.get(n, 0)})
    return pd.DataFrame(rows, columns=["predictor", "verdict", "skill", "TPS", ci, "AUROC", "T-ECE", "n runs",
                                       "censored", "clipped"])


def _ci(m: pd.Series, key: str) -> str:
    return Fm.interval(m.get(f"{key}_ci_low", np.nan), m.get(f"{key}_ci_high", np.nan), ".3f")


def leaderboard_details(ev, name=str) -> pd.DataFrame:
    """Every column of the leaderboard as text, best first: TPS with its SE, interval and per
    weighted step, the reference's TPS, skill and its CI, the usual metrics with their CIs (where
    the metrics were bootstrapped), final-step metrics and steps.

    Parameters
    ----------
    ev : Evaluation
    name : callable
        A predictor's label.

    Returns
    -------
    DataFrame
    """
    s, iv, ci = ev.summary, intervals(ev), f"{ev.settings.level:.0%} CI"
    rows = []
    for n in ev.order:
        r, k, m = s.loc[n], _row(ev.skill, n), _row(ev.metrics, n)
        rows.append({
            "predictor": name(n), "TPS mean": Fm.num(r["tps_mean"]), "± SE": Fm.num(r["tps_se"]),
            f"TPS {ci}": Fm.interval(iv.at[n, "low"], iv.at[n, "high"]), "per weighted step": Fm.num(r["tps_step_mean"]),
            "TPS_ref (same runs)": Fm.num(k.get("tps_ref", np.nan)), "skill": Fm.num(k.get("skill", np.nan), ".3f"),
            f"skill {ci}": Fm.interval(k.get("skill_ci_low", np.nan), k.get("skill_ci_high", np.nan), ".3f"),
            "AUROC": Fm.num(m.get("auroc", np.nan), ".3f"), f"AUROC {ci}": _ci(m, "auroc"),
            "AUPRC": Fm.num(m.get("auprc", np.nan), ".3f"), f"AUPRC {ci}": _ci(m, "auprc"),
            "T-ECE": Fm.num(m.get("tece_pooled", np.nan), ".3f"), f"T-ECE {ci}": _ci(m, "tece_pooled"),
            "AUROC (final step)": Fm.num(m.get("auroc_final", np.nan), ".3f"),
            "T-ECE (final step)": Fm.num(m.get("tece_final", np.nan), ".3f"),
            "n steps": int(r["n_steps"])})
    return pd.DataFrame(rows)


def report_table(ev, name=str) -> pd.DataFrame:
    """The leaderboard of the HTML report: the visible columns (the verdict where decided), the SE, AUPRC and the metrics' CIs.

    Parameters
    ----------
    ev : Evaluation
    name : callable
        A predictor's label.

    Returns
    -------
    DataFrame
    """
    ci = f"{ev.settings.level:.0%} CI"
    details = leaderboard_details(ev, name)[["± SE", "AUPRC", f"AUROC {ci}", f"T-ECE {ci}"]]
    table = pd.concat([leaderboard_table(ev, name), details], axis=1)
    return table if ev.verdicts else table.drop(columns="verdict")


def verdict_rows(ev) -> list[dict]:
    """One entry per predictor with a verdict, in the log's order: ``name``, ``label``, ``key`` (the
    label's stable machine key: :data:`tpsviz.diagnostics.verdict.LABEL_KEYS`), ``reason`` (the
    sentence after "name: label — ") and ``text`` (the whole sentence the CLI prints).

    Parameters
    ----------
    ev : Evaluation

    Returns
    -------
    list of dict
    """
    rows = []
    for n in ev.summary.index:
        v = ev.verdicts.get(n)
        if v is not None:
            reason = v.text.split(" — ", 1)[1] if " — " in v.text else v.text
            rows.append({"name": n, "label": v.label, "key": v.key, "reason": reason, "text": v.text})
    return rows


def verdict_table(ev, name=str) -> pd.DataFrame:
    """The verdicts as a table: ``predictor``, ``verdict``, ``why`` (the HTML reports).

    Parameters
    ----------
    ev : Evaluation
    name : callable
        A predictor's label.

    Returns
    -------
    DataFrame
    """
    return pd.DataFrame([{"predictor": name(r["name"]), "verdict": r["label"], "why": r["reason"]}
                         for r in verdict_rows(ev)], columns=["predictor", "verdict", "why"])
