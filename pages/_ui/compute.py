"""Page computations shared by the pages and the Export page / HTML report.

Each function reads cached results from ``state`` and returns tables and plotly figures; pages
render them, the report embeds them. Nothing here draws widgets.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

import tpsviz
from tpsviz import figures as F

from . import state as S

_MD = "\\`*_{}[]()#+-.!|<>~$:"


def _md(s) -> str:
    return "".join("\\" + ch if ch in _MD else ch for ch in str(s))


# ----------------------------------------------------------------------------- overview
def leaderboard(cfg: S.Config, data) -> dict:
    res = S.get_tps(cfg)
    rate, ref = S.get_reference(cfg)
    sk = S.skill_table(res, ref)
    met = S.get_metrics(cfg)
    s = res.summary
    rows = []
    for name in s.index:
        r = s.loc[name]
        m = met.loc[name] if name in met.index else pd.Series(dtype=float)
        rows.append({
            "predictor": F.display_name(name),
            "TPS mean": r["tps_mean"], "TPS CI low": r["tps_ci_low"], "TPS CI high": r["tps_ci_high"],
            "± SE": r["tps_se"], "per step": r["tps_step_mean"],
            "skill": sk.loc[name, "skill"], "skill ± SE": sk.loc[name, "skill_se"],
            "AUROC": m.get("auroc", np.nan), "AUROC CI": _ci(m, "auroc"),
            "AUPRC": m.get("auprc", np.nan), "AUPRC CI": _ci(m, "auprc"),
            "T-ECE": m.get("tece", np.nan), "T-ECE CI": _ci(m, "tece"),
            "n runs": int(r["n_trajectories"]), "censored": int(r["n_censored"]),
            "n steps": int(r["n_steps"]), "clipped": int(r["n_clipped"]),
            "q_Z fallback": int(r["n_qz_fallback"]),
        })
    table = pd.DataFrame(rows).sort_values("TPS mean", ascending=False, na_position="last")
    ref_mean = float(ref.mean()) if len(ref) else np.nan
    fig = F.leaderboard_figure(s, S.selected_colors(cfg, data), cfg.alpha, cfg.beta, ref_mean)
    return {"res": res, "table": table, "ref_rate": rate, "ref_mean": ref_mean, "figure": fig,
            "metrics": met, "skill": sk}


def _ci(m: pd.Series, key: str) -> str:
    lo, hi = m.get(f"{key}_lo", np.nan), m.get(f"{key}_hi", np.nan)
    if lo is None or not (np.isfinite(lo) and np.isfinite(hi)):
        return ""
    return f"[{lo:.3f}, {hi:.3f}]"


def compare(cfg: S.Config, data, baseline: str) -> dict:
    """Δ, SE, Δ/SE of TPS (analytic, paired by trajectory) and AUROC (paired bootstrap) vs baseline."""
    res = S.get_tps(cfg)
    d, se, z = S.paired_z_matrix(res)
    au = S.get_auroc_vs(baseline, cfg)
    rows = []
    for name in res.summary.index:
        if name == baseline:
            continue
        pm = au.get(name)
        rows.append({
            "predictor": F.display_name(name),
            "Δ TPS": d.loc[name, baseline], "SE (TPS)": se.loc[name, baseline], "Δ/SE (TPS)": z.loc[name, baseline],
            "Δ AUROC": pm.delta if pm else np.nan, "SE (AUROC)": pm.se if pm else np.nan,
            "Δ/SE (AUROC)": pm.z if pm else np.nan,
            "_name": name,
        })
    table = pd.DataFrame(rows)
    fig = F.delta_matrix_figure(z, "Paired Δ/SE of per-trajectory TPS (row − column); |Δ/SE| > 2 ≈ significant")
    return {"table": table, "z": z, "figure": fig}


def disagreements(cfg: S.Config, cmp_table: pd.DataFrame, met: pd.DataFrame, res, baseline: str) -> list[str]:
    """Plain-language sentences where rank metrics and TPS disagree."""
    out = []
    unit = cfg.unit
    for _, r in cmp_table.iterrows():
        zt, za = r["Δ/SE (TPS)"], r["Δ/SE (AUROC)"]
        if not np.isfinite(zt):
            continue
        name = r["_name"]
        nm, bl = _md(name), _md(baseline)
        if abs(zt) >= 2 and (not np.isfinite(za) or abs(za) < 2 or np.sign(za) != np.sign(zt)):
            better = "better" if zt > 0 else "worse"
            da = r["Δ AUROC"]
            if np.isfinite(da) and abs(da) < 1e-9:
                au = "AUROC is identical (Δ = 0: both rank the steps the same way)"
            elif not np.isfinite(za):
                au = "AUROC cannot tell them apart"
            elif abs(za) < 2:
                au = f"AUROC barely tells them apart (Δ = {da:+.3f}, Δ/SE = {za:+.1f})"
            else:
                au = f"AUROC points the other way (Δ = {da:+.3f}, Δ/SE = {za:+.1f})"
            out.append((abs(zt), f"**{nm}** vs **{bl}**: {au}, but TPS says {nm} is clearly {better} "
                                 f"(Δ = {r['Δ TPS']:+.3g} {unit} per run, Δ/SE = {zt:+.1f}). The ranking of its "
                                 f"forecasts is similar; how honest the probabilities are is not."))
    # rank flips between AUROC and TPS
    if len(met) >= 2 and "auroc" in met:
        s = res.summary["tps_mean"]
        a = met["auroc"].reindex(s.index)
        names = list(s.index)
        for i, x in enumerate(names):
            for y in names[i + 1:]:
                if np.isfinite(a[x]) and np.isfinite(a[y]) and (s[x] - s[y]) * (a[x] - a[y]) < 0 \
                        and abs(a[x] - a[y]) > 0.01:
                    hi_t, lo_t = (x, y) if s[x] > s[y] else (y, x)
                    out.append((0.5, f"Rank flip: **{_md(hi_t)}** has the better TPS but **{_md(lo_t)}** the better AUROC "
                                     f"({a[lo_t]:.3f} vs {a[hi_t]:.3f}). AUROC only checks ordering; TPS also checks "
                                     f"that the probabilities are right."))
    out.sort(key=lambda t: -t[0])
    return [s for _, s in out[:6]]


# ----------------------------------------------------------------------------- scoring lab
def score_curves(cfg: S.Config):
    from tpsviz.scores import beta_score_pair, clip_forecasts

    p = np.linspace(0.001, 0.999, 400)
    pc, _ = clip_forecasts(p, cfg.eps)
    s1, s0 = beta_score_pair(pc, cfg.alpha, cfg.beta)
    c = np.linspace(0.002, 0.998, 400)
    w = tpsviz.omega(c, cfg.alpha, cfg.beta)
    return (F.score_curves_figure(p, s1, s0, cfg.alpha, cfg.beta),
            F.omega_figure(c, w, cfg.alpha, cfg.beta, small=False))


def murphy(cfg: S.Config, data):
    from tpsviz.murphy import murphy_curve, murphy_integral
    from tpsviz.scores import beta_score, clip_forecasts

    comp, y, codes = S.complete_rows(data)
    c = np.linspace(0.002, 0.998, 250)
    frames, checks = [], []
    for name in cfg.predictors:
        p = data.forecasts(name)
        ok = comp & np.isfinite(p)
        if ok.sum() < 2:
            continue
        cur = murphy_curve(p[ok], y[ok], thresholds=c)
        frames.append(pd.DataFrame({"predictor": name, "c": c, "loss": cur.mean_loss}))
        try:
            integral = murphy_integral(murphy_curve(p[ok], y[ok]), cfg.alpha, cfg.beta)
        except Exception:
            integral = np.nan
        mean_s = float(np.mean(beta_score(p[ok], y[ok], cfg.alpha, cfg.beta)))
        checks.append({"predictor": F.display_name(name), "ω-weighted area": integral, "mean score": mean_s,
                       "n steps": int(ok.sum())})
    curves = pd.DataFrame(frames[0].iloc[:0]) if not frames else pd.concat(frames, ignore_index=True)
    fig = F.murphy_figure(curves, S.selected_colors(cfg, data), c, tpsviz.omega(c, cfg.alpha, cfg.beta),
                          cfg.alpha, cfg.beta)
    return fig, pd.DataFrame(checks)


def schedule_plot(cfg: S.Config, data):
    s = cfg.schedule_obj
    h = int(cfg.horizon) if s.name == "back" else int(min(max(data.trajectories["length"].max(), 5), 60))
    t = np.arange(1, h + 1)
    if s.name == "column":
        w = data.steps.groupby("t")["weight"].mean().reindex(t).to_numpy() if "weight" in data.steps else np.zeros(h)
    else:
        w = s.weights(t, np.full(t.shape, h))
    return F.schedule_figure(t, w, s.formula + (f" (drawn for a run of length T = {h})" if s.name in ("endpoint", "per-length") else ""),
                             s.verdict.status)


def _tece(p, y):
    from tpsviz.metrics import tece
    return tece(p, y, 10)


def _auroc(p, y):
    from tpsviz.metrics import auroc
    return auroc(p, y)


def why_not_auroc(cfg: S.Config, data) -> dict:
    """The three demonstrations of DESIGN §2.4 on the current log (complete runs).

    Uses the truthful/reference predictor if there is one, else the first selected. Scores use
    the current α, β, schedule and ε.
    """
    from tpsviz.metrics import bin_edges, bin_index, scalarised_score

    comp_t = ~data.trajectories["censored"].to_numpy()
    d = data.subset(comp_t)
    if d.n_trajectories < 10:
        return {}
    base = next((p for p in d.predictors if F.is_reference(p)), cfg.predictors[0] if cfg.predictors else d.predictors[0])
    p = d.forecasts(base)
    ok_rows = np.isfinite(p)
    codes = d.steps["traj"].to_numpy()
    y = d.trajectories["outcome"].to_numpy(dtype=float)[codes]
    pf = np.where(ok_rows, p, 0.5)
    # 1. monotone distortion: over-confident sharpening of the logit (ranking unchanged)
    lg = np.log(np.clip(pf, 1e-9, 1 - 1e-9)) - np.log1p(-np.clip(pf, 1e-9, 1 - 1e-9))
    sharp = 1 / (1 + np.exp(-3 * lg))
    # 2. bin-mean forecast: every forecast replaced by the observed success rate of its bin
    edges = bin_edges(pf, 10, "uniform")
    b = bin_index(pf, edges)
    rate = np.bincount(b, weights=y, minlength=10) / np.maximum(np.bincount(b, minlength=10), 1)
    binned = rate[b]
    # 3. Φ_mean manipulation: truthful until the last step, which is set so the run's mean forecast
    #    equals the last truthful forecast (the best scalar) — wins on the mean-scalarised score
    tt = d.steps["t"].to_numpy()
    length = d.trajectories["length"].to_numpy()[codes]
    last = tt == length
    sum_before = np.bincount(codes, weights=np.where(last, 0.0, pf), minlength=d.n_trajectories)
    target_last = pf[last]
    manip_last = np.clip(length[last] * target_last - sum_before[codes[last]], 0, 1)
    manip = pf.copy()
    manip[last] = manip_last
    # the same forecasts recalibrated by isotonic regression (PAV, in-sample like the bin means):
    # also calibrated, but keeps the within-bin ordering
    from tpsviz.decomposition import pav
    iso = np.clip(pav(pf, y), 0.0, 1.0)
    dd = (d.with_predictor("__sharp__", sharp).with_predictor("__binned__", binned)
          .with_predictor("__manip__", manip).with_predictor("__iso__", iso))
    from dataclasses import replace
    res = tpsviz.compute_tps(dd, replace(cfg.score_settings(n_boot=0), censoring="complete"),
                             [base, "__sharp__", "__binned__", "__manip__", "__iso__"])
    tps = res.summary["tps_mean"]
    lab = {base: f"{base} (as logged)", "__sharp__": "sharpened (logit × 3)", "__binned__": "bin-mean forecast",
           "__manip__": "Φ_mean-gamed trace", "__iso__": "isotonic-recalibrated"}
    unit = cfg.unit
    t1 = pd.DataFrame({"AUROC (↑)": [_auroc(pf, y), _auroc(sharp, y)],
                       f"TPS ({unit}/run, ↑)": [tps[base], tps["__sharp__"]]},
                      index=[lab[base], lab["__sharp__"]])
    t2 = pd.DataFrame({"T-ECE (↓)": [_tece(iso, y), _tece(binned, y)],
                       f"TPS ({unit}/run, ↑)": [tps["__iso__"], tps["__binned__"]]},
                      index=[lab["__iso__"], lab["__binned__"]])
    s_true = scalarised_score(pf, y, codes, "mean", cfg.alpha, cfg.beta).mean()
    s_man = scalarised_score(manip, y, codes, "mean", cfg.alpha, cfg.beta).mean()
    t3 = pd.DataFrame({f"score of mean F ({unit}, ↑)": [s_true, s_man],
                       f"TPS ({unit}/run, ↑)": [tps[base], tps["__manip__"]]},
                      index=[lab[base], lab["__manip__"]])
    return {"base": base, "n": d.n_trajectories, "tables": [t1, t2, t3]}


# ----------------------------------------------------------------------------- report / export
def settings_dict(cfg: S.Config, data, src) -> dict:
    from tpsviz.tps import CENSORING_LABELS

    s = cfg.schedule_obj
    qz = ""
    if cfg.censoring == "exact":
        qz = {"log": "from the log's q_z column", "rollouts": "Monte-Carlo mean of the rollouts",
              "constant": f"{cfg.qz_const:g} for every censored run"}[cfg.qz_source]
    return {
        "Data": f"{src.name if src else '?'} ({data.n_trajectories} runs, {data.n_steps} steps, {data.n_censored} censored)",
        "Score family": f"{cfg.family_name} (α={cfg.alpha:g}, β={cfg.beta:g}); units: {cfg.unit}",
        "Weight schedule": f"{s.spec}: {s.formula}",
        "Verdict of the schedule": f"{s.verdict.status} — {s.verdict.reason}",
        "Censoring": CENSORING_LABELS[cfg.censoring] + (f"; q_Z {qz}" if qz else ""),
        "ε (clipping)": f"{cfg.eps:g}",
        "Bootstrap": f"{cfg.n_boot} replicates over trajectories, seed {S.SEED}",
        "Predictors": ", ".join(cfg.predictors),
        "Filters": "; ".join(f"{c} {k} {v}" for c, k, v in cfg.filters) or "none",
        "Recalibrations": ", ".join(cfg.recal) or "none",
    }


def report_sections(cfg: S.Config, data) -> list:
    from tpsviz.report import Section

    colors = S.selected_colors(cfg, data)
    lb = leaderboard(cfg, data)
    table = lb["table"][["predictor", "TPS mean", "TPS CI low", "TPS CI high", "± SE", "skill", "skill ± SE",
                         "AUROC", "AUROC CI", "AUPRC", "T-ECE", "n runs", "censored", "clipped"]]
    secs = [Section("Leaderboard", f"TPS in {cfg.unit} per trajectory (higher is better, 0 is perfect), 95% "
                    "bootstrap CI over trajectories; skill against the base-rate forecast.", lb["figure"], table)]
    preds = list(cfg.predictors)
    if len(preds) >= 2:
        base = next((p for p in preds if F.is_reference(p)), preds[0])
        cmp = compare(cfg, data, base)
        secs.append(Section(f"Paired comparison against {base}", "Δ = predictor − baseline on the same runs.",
                            cmp["figure"], cmp["table"].drop(columns="_name")))
    panels, _ = S.get_reliability("all", None, False, 10, cfg, preds[:6])
    if panels:
        secs.append(Section("Reliability (all steps, complete runs)", "", F.reliability_figure(
            panels, colors, "Reliability diagrams with CORP curves and consistency bands")))
    dec, _ = S.get_decomposition("all", None, False, cfg, by_step=False, preds=preds[:6])
    if len(dec):
        secs.append(Section("CORP decomposition", "mean loss = MCB − DSC + UNC per step.",
                            F.decomposition_figure(dec, colors, cfg.alpha, cfg.beta)))
    secs.append(Section("Mean contribution by step", "", F.step_means_figure(S.get_step_means(cfg), colors,
                                                                             cfg.alpha, cfg.beta)))
    if data.n_censored:
        rows = []
        res = {}
        for m in ("complete", "simple", "exact", "upper"):
            res[m] = S.get_tps(cfg, censoring=m)
            for p in res[m].summary.index:
                r = res[m].summary.loc[p]
                rows.append({"predictor": p, "mode": m, "tps_mean": r["tps_mean"], "tps_ci_low": r["tps_ci_low"],
                             "tps_ci_high": r["tps_ci_high"], "n_trajectories": int(r["n_trajectories"])})
        t = pd.DataFrame(rows)
        secs.append(Section("TPS by censoring treatment", "", F.censoring_modes_figure(t, colors, cfg.alpha, cfg.beta),
                            t))
    curves, omega = score_curves(cfg)
    secs.append(Section("The scoring rule", "S(p,1), S(p,0) and the threshold weight ω(c) for the current α, β.", curves))
    secs.append(Section("Threshold weight", "", omega))
    mfig, _ = murphy(cfg, data)
    secs.append(Section("Murphy diagram", "", mfig))
    secs.append(Section("Weight schedule", cfg.schedule_obj.verdict.reason, schedule_plot(cfg, data)))
    return secs


def all_figures(cfg: S.Config, data) -> dict:
    """Name → figure of every figure in the report (for PNG export)."""
    return {sec["title"]: sec["figure"] for sec in report_sections(cfg, data) if sec.get("figure") is not None}
