"""Why not AUROC, ECE or a scalarised score? Three demonstrations on a log (docs/theory.md §5).

Each function builds a modified predictor, scores it next to the original with the product's
own metrics and TPS, and returns a :class:`Demonstration`: the numbers, the new forecasts and
one sentence a stakeholder can read.

- :func:`monotone_distortion`: F' = σ(k·logit F), an increasing transform. AUROC cannot move
  (it only sees the order); TPS sees the lost calibration.
- :func:`bin_mean_forecast`: every forecast replaced by the outcome rate of its ECE bin. T-ECE
  becomes 0 by construction, yet all resolution inside a bin is thrown away and TPS drops.
- :func:`phi_mean_manipulation`: a non-truthful trace that beats the truthful one on the
  scalarised Brier score of Φ_mean but loses on TPS. Only the *final* report is changed, to
  F'_T = T·q_T − Σ_{t<T} q_t (clipped to [0, 1]), which moves the run's mean forecast to q_T,
  the best scalar given everything seen at the end. The manipulated trace only uses the past,
  so it is a legitimate forecasting strategy; earlier reports cannot be changed to hit q_T
  without knowing the future. It needs the truthful q_t (the demo data's ``truthful``
  predictor) and reports expected scores under that truth as well as the realised ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from tpsviz.diagnostics.claims import change_text, is_clear, z_text
from tpsviz.diagnostics.leaderboard import final_rows, labelled_rows
from tpsviz.core.inference import paired_difference
from tpsviz.core.data import TrajectoryData
from tpsviz.diagnostics.metrics import auroc, bin_edges, bin_index, scalarised_score, tece
from tpsviz.core.scores import expected_score
from tpsviz.core.censoring import default_censoring
from tpsviz.core.tps import ScoreSettings, compute_tps, step_weights

__all__ = ["Demonstration", "monotone_distortion", "bin_mean_forecast", "phi_mean_manipulation",
           "default_predictor"]


@dataclass
class Demonstration:
    """One why-not-AUROC demonstration.

    Attributes
    ----------
    name : str
    table : DataFrame
        One row per forecast (the original and the modified one, index = predictor name),
        the metric that is fooled, and TPS (mean per trajectory, SE).
    explanation : str
        One sentence with the numbers filled in.
    forecasts : ndarray
        The modified forecast per step row of ``data`` (NaN where the original is missing).
    data : TrajectoryData
        ``data`` with the modified forecast added as a predictor (for plots).
    comparison : dict
        Paired TPS difference modified − original over runs: ``delta``, ``se``, ``z``.
    """

    name: str
    table: pd.DataFrame
    explanation: str
    forecasts: np.ndarray
    data: TrajectoryData
    comparison: dict = field(default_factory=dict)


def default_predictor(data: TrajectoryData) -> str:
    """``truthful`` when the log has it (the demo data), else the first predictor."""
    if "truthful" in data.predictors:
        return "truthful"
    if not data.predictors:
        raise ValueError("the log has no predictor")
    return data.predictors[0]


def _settings(data, settings):
    s = settings or ScoreSettings(censoring=default_censoring(data))
    return replace(s, n_boot=0)


def _tps_pair(data, settings, a, b):
    res = compute_tps(data, settings, [a, b])
    m = res.tps_matrix().dropna()
    est, z = paired_difference(m[b].to_numpy(), m[a].to_numpy(), n_boot=0)
    return res.summary, {"delta": est.mean, "se": est.se, "z": z, "n": est.n}


def _metric_rows(data, name):
    lab, y = labelled_rows(data)
    p = data.forecasts(name)
    ok = lab & ~np.isnan(p)
    return p[ok], y[ok], data.steps["traj"].to_numpy()[ok], np.flatnonzero(ok)


def _new_name(data, base):
    name = base
    while name in data.predictors:
        name += "'"
    return name


def monotone_distortion(data: TrajectoryData, settings: ScoreSettings | None = None,
                        predictor: str | None = None, strength: float = 3.0) -> Demonstration:
    """AUROC is unchanged by an increasing transform of the forecasts; TPS is not.

    Parameters
    ----------
    data : TrajectoryData
    settings : ScoreSettings, optional
        How TPS is scored (bootstrap off).
    predictor : str, optional
        Default :func:`default_predictor`.
    strength : float
        k > 0 in F' = σ(k·logit F): k > 1 pushes forecasts towards 0/1 (over-confident),
        k < 1 towards ½ (under-confident). F is clipped to [1e-12, 1−1e-12] first.

    Returns
    -------
    Demonstration
        ``table`` columns: ``auroc``, ``auroc_final`` (complete runs), ``tps_mean``,
        ``tps_se``.
    """
    if not strength > 0 or strength == 1:
        raise ValueError("strength must be positive and different from 1")
    settings = _settings(data, settings)
    name = predictor or default_predictor(data)
    p = data.forecasts(name)
    with np.errstate(invalid="ignore"):
        pc = np.clip(p, 1e-12, 1 - 1e-12)
        new = 1.0 / (1.0 + np.exp(-strength * (np.log(pc) - np.log1p(-pc))))
    new = np.where(np.isnan(p), np.nan, new)
    new_name = _new_name(data, f"{name} (distorted k={strength:g})")
    d2 = data.with_predictor(new_name, new)
    summary, comp = _tps_pair(d2, settings, name, new_name)
    rows = []
    for n in (name, new_name):
        pv, yv, g, idx = _metric_rows(d2, n)
        fin = final_rows(d2.steps["traj"].to_numpy(), idx)
        pf = d2.forecasts(n)[fin]
        yf = labelled_rows(d2)[1][fin]
        rows.append({"predictor": n, "auroc": _safe(auroc, pv, yv),
                     "auroc_final": _safe(auroc, pf, yf),
                     "tps_mean": summary.loc[n, "tps_mean"], "tps_se": summary.loc[n, "tps_se"]})
    table = pd.DataFrame(rows).set_index("predictor")
    a0, a1 = table["auroc"]
    t0, t1 = table["tps_mean"]
    how = "towards 0 and 1" if strength > 1 else "towards ½"
    honest = ("the probabilities are no longer honest and "
              if is_clear(comp["z"]) and comp["delta"] < 0 else "")
    explanation = (
        f"Pushing every {name} forecast {how} keeps their order, so AUROC stays at {a0:.3f} "
        + (f"(now {a1:.3f}), " if f"{a0:.3f}" != f"{a1:.3f}" else "") + f"but {honest}"
        + change_text("mean TPS per trajectory", t0, t1, comp["se"]) + ".")
    return Demonstration("monotone distortion", table, explanation, new, d2, comp)


def _safe(fn, *args):
    try:
        return fn(*args)
    except ValueError:
        return np.nan


def bin_mean_forecast(data: TrajectoryData, settings: ScoreSettings | None = None,
                      predictor: str | None = None, reference: str | None = None,
                      n_bins: int = 10) -> Demonstration:
    """Replace every forecast by its bin's outcome rate: T-ECE 0, yet TPS below the truthful.

    The bins are the equal-width T-ECE bins of the predictor's forecasts; each bin's rate is
    the outcome rate of its complete-run rows (in-sample, which only flatters the bin-mean
    forecast). Censored runs' rows get the rate of their bin too; a bin without complete rows
    keeps the overall rate. On the complete runs the pooled T-ECE of the new forecast is 0 up
    to rounding: within any bin of the new values the mean forecast equals the outcome rate.
    T-ECE therefore ranks the bin-mean forecast at least as high as any other, the truthful
    one included, although it has discarded all information within a bin and along the run.

    Parameters
    ----------
    data, settings
        As in :func:`monotone_distortion`.
    predictor : str, optional
        The forecast to bin. Default: the first predictor that is not ``truthful``.
    reference : str, optional
        What the bin-mean forecast is judged against. Default: ``truthful`` when the log has
        it, else ``predictor`` itself.
    n_bins : int
        Equal-width bins.

    Returns
    -------
    Demonstration
        ``table`` rows: the predictor, its bin-mean forecast and (if different) the
        reference; columns ``tece_pooled`` (equal-width, n_bins, complete runs), ``auroc``,
        ``tps_mean``, ``tps_se``. ``comparison``: paired TPS of bin-mean − reference, and ``reference``.
    """
    settings = _settings(data, settings)
    if predictor is None:
        others = [p for p in data.predictors if p != "truthful"]
        predictor = others[0] if others else default_predictor(data)
    name = predictor
    if reference is None:
        reference = "truthful" if "truthful" in data.predictors else name
    for n in (name, reference):
        if n not in data.predictors:
            raise ValueError(f"unknown predictor {n!r}; the log has {data.predictors}")
    new = _bin_means(data, name, n_bins)
    new_name = _new_name(data, f"{name} (bin means)")
    d2 = data.with_predictor(new_name, new)
    shown = [name, new_name] + ([reference] if reference != name else [])
    summary = compute_tps(d2, settings, shown).summary
    _, comp = _tps_pair(d2, settings, reference, new_name)
    comp["reference"] = reference  # (Δ = bin means − reference: the lab's label names it)
    rows = []
    for n in shown:
        pv2, yv2, _, _ = _metric_rows(d2, n)
        rows.append({"predictor": n, "tece_pooled": tece(pv2, yv2, n_bins),
                     "auroc": _safe(auroc, pv2, yv2),
                     "tps_mean": summary.loc[n, "tps_mean"], "tps_se": summary.loc[n, "tps_se"]})
    table = pd.DataFrame(rows).set_index("predictor")
    explanation = _bin_mean_words(table, name, new_name, reference, comp)
    return Demonstration("bin-mean forecast", table, explanation, new, d2, comp)


def _bin_means(data: TrajectoryData, name: str, n_bins: int) -> np.ndarray:
    """Every forecast of ``name`` replaced by the outcome rate of its equal-width bin over the complete
    runs' rows (the overall rate for a bin without such rows; NaN where there is no forecast)."""
    p = data.forecasts(name)
    pv, yv, _, _ = _metric_rows(data, name)
    if pv.size == 0:
        raise ValueError("the bin-mean forecast needs complete runs (observed outcomes)")
    edges = bin_edges(pv, n_bins, "uniform")
    b = bin_index(pv, edges)
    cnt = np.bincount(b, minlength=n_bins)
    rate = np.bincount(b, weights=yv, minlength=n_bins)
    rate = np.where(cnt > 0, rate / np.maximum(cnt, 1), yv.mean())
    new = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    new[ok] = rate[bin_index(p[ok], edges)]
    return new


def _bin_mean_words(table: pd.DataFrame, name: str, new_name: str, reference: str, comp: dict) -> str:
    """The bin-mean demonstration in one sentence, with its numbers."""
    e_new, e_ref = table.loc[new_name, "tece_pooled"], table.loc[reference, "tece_pooled"]
    t_new, t_ref = table.loc[new_name, "tps_mean"], table.loc[reference, "tps_mean"]
    if is_clear(comp["z"]):
        verdict = "yet TPS clearly ranks it below" if comp["delta"] < 0 else "and TPS clearly ranks it above"
    else:
        verdict = "and TPS does not separate it clearly from"
    who = f"{reference}'s" if reference != name else "the original's"
    sa, sb = f"{t_new:.3f}", f"{t_ref:.3f}"
    return (
        f"Replacing each {name} forecast by the success rate of its bin gives a trajectory ECE "
        f"of {e_new:.3f} (vs {who} {e_ref:.3f}), a 'perfect' calibration score, {verdict} "
        f"{reference}: mean TPS {sa} vs {sb} (Δ = {comp['delta']:+.3f} ± {comp['se']:.3f} per "
        f"trajectory, {z_text(comp['z'])})"
        + (", because the bins throw away what the forecast knew within a bin and along the run."
           if is_clear(comp["z"]) and comp["delta"] < 0 else "."))


def phi_mean_manipulation(data: TrajectoryData, settings: ScoreSettings | None = None,
                          truthful: str | None = None) -> Demonstration:
    """A trace that beats the truthful one on the Φ_mean Brier score and loses on TPS.

    On every complete run the final report is replaced by F'_T = clip(T·q_T − Σ_{t<T} q_t,
    0, 1), which moves the run's mean forecast towards (or onto) q_T; all other reports stay
    truthful. Given the history H_T, E[S(Φ, Y) | H_T] = expected_score(Φ, q_T) increases
    whenever Φ gets closer to q_T (the half Brier score is −½(Φ−q_T)² − ½q_T(1−q_T) in
    expectation), so the manipulated trace wins the scalarised score; TPS loses
    w_T [E S(q_T) − E S(F'_T)] ≥ 0 in expectation at the final step, because TPS is strictly
    proper for every report. Censored runs are left unchanged and out of the scores.

    Parameters
    ----------
    data : TrajectoryData
    settings : ScoreSettings, optional
        TPS settings (α, β, schedule, ε); runs are scored complete-case.
    truthful : str, optional
        The predictor holding the true q_t (default :func:`default_predictor`). The expected
        scores are only meaningful if it really is the truth (as on the synthetic demo data).

    Returns
    -------
    Demonstration
        ``table`` columns: ``scal_brier_mean`` (realised mean half-Brier reward of Φ_mean over
        complete runs), ``scal_brier_mean_expected`` (its expectation under the truth),
        ``tps_mean`` and ``tps_se`` (realised, complete runs), ``tps_expected`` (expected
        TPS under the truth). ``comparison`` also holds ``n_changed`` (runs whose last report
        moved) and ``scal_delta``/``scal_se`` (paired over runs, realised).
    """
    settings = replace(_settings(data, settings), censoring="complete")
    name = truthful or default_predictor(data)
    q = data.forecasts(name)
    codes = data.steps["traj"].to_numpy()
    lab, y = labelled_rows(data)
    idx = np.flatnonzero(lab & ~np.isnan(q))
    if idx.size == 0:
        raise ValueError("the Φ_mean manipulation needs complete runs")
    last = final_rows(codes, idx)
    cnt = np.bincount(codes[idx], minlength=data.n_trajectories)
    new = _gamed_last_reports(q, codes, idx, last, cnt)
    changed = int(np.sum(~np.isclose(new[last], q[last], rtol=0, atol=1e-12)))
    new_name = _new_name(data, f"{name} (Φ_mean-gamed)")
    d2 = data.with_predictor(new_name, new)
    summary, comp = _tps_pair(d2, settings, name, new_name)
    w = step_weights(d2, settings.schedule)
    rows, scal = [], {}
    for n in (name, new_name):
        f = d2.forecasts(n)
        scal[n] = scalarised_score(f[idx], y[idx], codes[idx], "mean", 1.0, 1.0)
        exp_scal, exp_tps = _expected_scores(f, q, w, codes, idx, last, cnt, settings)
        rows.append({"predictor": n, "scal_brier_mean": float(scal[n].mean()), "scal_brier_mean_expected": exp_scal,
                     "tps_mean": summary.loc[n, "tps_mean"], "tps_se": summary.loc[n, "tps_se"],
                     "tps_expected": exp_tps})
    table = pd.DataFrame(rows).set_index("predictor")
    est, _ = paired_difference(scal[new_name], scal[name], n_boot=0)
    comp.update(n_changed=changed, scal_delta=est.mean, scal_se=est.se)
    explanation = _phi_mean_words(table, name, comp)
    return Demonstration("Φ_mean manipulation", table, explanation, new, d2, comp)


def _gamed_last_reports(q: np.ndarray, codes: np.ndarray, idx: np.ndarray, last: np.ndarray,
                        cnt: np.ndarray) -> np.ndarray:
    """``q`` with the final report of every run (rows ``last`` of the labelled rows ``idx``, ``cnt`` of
    them per run) moved to F'_T = clip(T·q_T − Σ_{t<T} q_t, 0, 1): the run's mean forecast onto q_T."""
    g = codes[idx]
    tot = np.bincount(g, weights=q[idx], minlength=cnt.size)
    lt = codes[last]
    q_last = q[last]
    target = cnt[lt] * q_last - (tot[lt] - q_last)
    new = q.copy()
    new[last] = np.clip(target, 0.0, 1.0)
    return new


def _expected_scores(f: np.ndarray, q: np.ndarray, w: np.ndarray, codes: np.ndarray, idx: np.ndarray,
                     last: np.ndarray, cnt: np.ndarray, settings: ScoreSettings) -> tuple[float, float]:
    """Mean over the complete runs of the expected half-Brier score of Φ_mean(f) and of the expected TPS
    of ``f``, both under the truth ``q`` (the final q_T for the scalar, q_t at every step for TPS)."""
    g, lt, n_t = codes[idx], codes[last], cnt.size
    eps = float(settings.eps)
    fc = np.clip(f[idx], eps, 1 - eps) if eps > 0 else f[idx]
    phi = np.bincount(g, weights=f[idx], minlength=n_t)[lt] / cnt[lt]
    exp_scal = expected_score(phi, q[last], 1.0, 1.0)
    exp_steps = w[idx] * expected_score(fc, q[idx], settings.alpha, settings.beta)
    exp_tps = np.bincount(g, weights=exp_steps, minlength=n_t)[lt]
    return float(exp_scal.mean()), float(exp_tps.mean())


def _phi_mean_words(table: pd.DataFrame, name: str, comp: dict) -> str:
    """The Φ_mean demonstration in one sentence (two when the log contradicts its premise)."""
    s0, s1 = table["scal_brier_mean_expected"]
    t0, t1 = table["tps_expected"]
    truth = ("the final truthful probability" if name == "truthful" else
             f"the final {name} forecast (taken as the truth: the expected scores below are only "
             f"meaningful if {name} is the true probability)")
    sa, sb = f"{s0:.4f}", f"{s1:.4f}"
    ta, tb = f"{t0:.3f}", f"{t1:.3f}"
    explanation = (
        f"Changing only the last report so that each run's average forecast lands on {truth} "
        + (f"raises the expected scalarised Brier score of the mean forecast from {sa} to {sb}"
           if sb != sa else f"leaves the expected scalarised Brier score of the mean forecast at {sa}")
        + ", yet the trace is no longer honest and TPS, which scores every report, "
        + (f"drops from {ta} to {tb} in expectation." if tb != ta else
           f"loses {t0 - t1:.2g} per run in expectation."))
    if is_clear(comp["z"]) and comp["delta"] > 0:  # (a real log: helper-26 read the two as a contradiction)
        explanation += (
            f" On these runs, though, the changed trace scores higher (Δ = {comp['delta']:+.3f} ± {comp['se']:.3f} "
            f"per run, {z_text(comp['z'])}). Were {name}'s last reports its true probabilities, no change to them "
            f"could gain on average; so they are not: {name} is miscalibrated at the last step, and the "
            "expectations above describe an honest forecaster, not this log.")
    return explanation
