"""Page computations shared by the pages and the Export page / HTML report.

Each function reads cached results from ``state`` and returns tables and plotly figures; pages
render them, the report embeds them. Nothing here draws widgets.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

import tpsviz
from tpsviz.core import formatting as Fm
from tpsviz.core.inference import normal_quantile
from tpsviz.core.scores import beta_score_pair, clip_forecasts
from tpsviz.diagnostics import claims
from tpsviz.diagnostics.claims import z_text
from tpsviz.diagnostics.groups import difference_words, group_columns, group_labels, group_order
from tpsviz.diagnostics.versus_runs import measure_words, success_sentence, versus_runs
from tpsviz.diagnostics.murphy import murphy_diagram
from tpsviz.diagnostics.verdict import RULES
from tpsviz.evaluation.report import leaderboard_figure
from tpsviz.evaluation.summary import comparison_words, model_column
from tpsviz.evaluation.tables import exact_01_counts, interval_kind, report_table, verdict_table
from tpsviz.report import figures as F
from tpsviz.report.html import Section

from . import loading as L
from . import results as Rs
from . import evaluation as E
from . import state as S
from .evaluation import evaluation
from .sample import sample_info
from .text import md as _md
from .wording import say


def infinite_note(ev) -> str | None:
    """One sentence when some TPS of an Evaluation is −∞: which predictors, how many forecasts are
    exactly 0/1, what to change in the sidebar."""
    s, st_ = ev.summary, ev.settings
    bad = [n for n in s.index if np.isinf(s.loc[n, "tps_mean"])]
    if not bad:
        return None
    counts = exact_01_counts(ev.data, bad)
    who = "; ".join(f"{_md(n)}: {counts[n]:,} forecast{'s' if counts[n] != 1 else ''} exactly 0 or 1" for n in bad)
    return (f"**TPS is −∞** for {', '.join(_md(n) for n in bad)} ({who}). With ε = {st_.eps:g} and this score "
            f"(α = {st_.alpha:g}, β = {st_.beta:g}), a forecast of exactly 0 for a success (or 1 for a failure) costs "
            f"an infinite penalty, so the mean, its CI and the skill are −∞ or undefined (—). Raise ε in the sidebar "
            f"to clip forecasts to [ε, 1−ε], or use a bounded score such as Brier.")


def group_view(cfg: S.Config, by: str, base: str | None, pair_on: str) -> dict:
    """Display tables of tpsviz.diagnostics.groups: the leaderboard per group and each group minus the base group,
    with the differences in words conditioned on Δ/SE (tpsviz.diagnostics.claims)."""
    return group_tables(*Rs.groups(by, base, pair_on, a=Rs.analysis(cfg)))


def model_words(cfg: S.Config, data, skip=()) -> str:
    """Model X vs model Y in words when the log has a column naming the model or agent
    (tpsviz.evaluation.summary.model_column): each model against the base group, Δ TPS ± SE
    (analytic, the same as the group comparison's table), or "" without such a column."""
    by = model_column(data)
    if by is None:
        return ""
    try:  # TPS differences and their SE need no bootstrap
        _, base, diffs = Rs.groups(by, None, "auto", a=Rs.analysis(cfg, n_boot=0))
    except ValueError:  # e.g. no group with two runs: the summary says nothing of models
        return ""
    return comparison_words(diffs, base, cfg.unit, by=by, skip=skip)


def logs_words(cfg: S.Config, base: str, diffs: dict, candidate: str, skip=()) -> str:
    """The candidate log against this one in words (two logs loaded on the Overview)."""
    return comparison_words(diffs, base, cfg.unit, skip=skip,
                            names={"candidate": f"the candidate log ({candidate})", base: "this log"})


def versus_tables(tables: dict, names: dict) -> dict:
    """Display of tpsviz.diagnostics.versus_runs results (one per side against the base): the success sentence of
    each, the other measures in words, one table of every measure with Δ and SE, the pairing of each."""
    rows, sentences, words, pairing, recorded = [], {}, {}, {}, set()
    for g, t in tables.items():
        at = t.attrs
        sentences[g] = success_sentence(t, names)
        words[g] = [measure_words(r, names, at["a"], g) for _, r in t.iterrows() if r["measure"] != "success"]
        pairing[g] = at["pairing"]
        recorded |= set(t["measure"])
        for _, r in t.iterrows():
            pct = r["measure"] == "success"
            spec = ".1%" if pct else ".4g"
            rows.append({"side": names.get(g, g), "measure": r["measure"], "base": Fm.num(r["mean_a"], spec),
                         "side's": Fm.num(r["mean_b"], spec),
                         "Δ": Fm.num(100 * r["delta"], "+.1f") + " points" if pct else Fm.num(r["delta"], "+.4g"),
                         "SE": Fm.num(100 * r["se"], ".1f") if pct else Fm.num(r["se"], ".3g"),
                         "Δ/SE": Fm.num(r["z"], "+.1f"), "runs (base, side)": f"{int(r['n_a'])}, {int(r['n_b'])}"})
    return {"sentences": sentences, "words": words, "table": pd.DataFrame(rows), "pairing": pairing,
            "names": {g: names.get(g, g) for g in tables},
            "not recorded": [m for m in ("cost", "duration") if m not in recorded]}


def group_versus(cfg: S.Config, data, by: str, base: str | None, pair_on: str) -> dict:
    """Success, steps, cost and duration of the groups of ``by`` against the base group (versus_tables), with or
    without forecasts; the base is ``base`` when it is a group, else the group with the most runs."""
    labels = group_labels(data, by)
    groups = group_order(labels, by)
    base = base if base in groups else max(groups, key=lambda g: int((labels == g).sum()))
    tables = {g: versus_runs(data, by, base, g, labels, pair_on=pair_on) for g in groups if g != base}
    return versus_tables(tables, {g: f"{by} {g}" for g in groups}) | {"base": base}


def group_tables(table: pd.DataFrame, base: str, diffs: dict) -> dict:
    """Display tables of a group_table frame and its group_difference frames (see group_view)."""
    rows = [{"group": g, "predictor": F.display_name(p), "TPS": Fm.pm(r["tps_mean"], r["tps_se"], ".3f"),
             "skill": Fm.pm(r["skill"], r["skill_se"], ".3f"), "n runs": int(r["n_scored"]),
             "success rate": Fm.num(r["success_rate"], ".3f")} for (g, p), r in table.iterrows()]
    out = [{"group": g, "predictor": F.display_name(p),
            "Δ TPS": Fm.num(r["tps_delta"], "+.3f"), "SE (TPS)": Fm.num(r["tps_se"], ".3f"),
            "Δ/SE (TPS)": Fm.num(r["tps_z"], "+.1f"),
            "Δ skill": Fm.num(r["skill_delta"], "+.3f"), "SE (skill)": Fm.num(r["skill_se"], ".3f"),
            "Δ/SE (skill)": Fm.num(r["skill_z"], "+.1f"),
            "in words": difference_words(r, base, g, show_z=False)}  # Δ/SE has its own columns
           for g, d in diffs.items() for p, r in d.iterrows()]
    pairing = {g: d.attrs.get("pairing", "") for g, d in diffs.items()}
    return {"table": pd.DataFrame(rows), "diff": pd.DataFrame(out), "base": base, "pairing": pairing,
            "small": table.attrs.get("small_groups") or {}}


def compare(cfg: S.Config, data, baseline: str, metrics: bool = True, figure: bool = True) -> dict:
    """The Evaluation's comparison against ``baseline`` (``ev.compare``): TPS Δ, SE, Δ/SE (analytic, paired by run) and, with
    ``metrics``, AUROC and T-ECE Δ by paired bootstrap; compare.z_matrix for the heatmap (its figure
    only with ``figure``: the Overview draws it once, from the first call, and fills in the metrics
    of the table later)."""
    tps, z = E.compare_tps(baseline, cfg)
    t = tps
    if metrics:
        t = tps.join(E.compare_metrics(baseline, Rs.metric_boot(cfg), cfg))
    rows = []
    for name in t.index:
        r = t.loc[name]
        row = {"predictor": F.display_name(name),
               "Δ TPS": Fm.num(r["tps_delta"], "+.4f"), "SE (TPS)": Fm.num(r["tps_se"]),
               "Δ/SE (TPS)": Fm.num(r["tps_z"], "+.1f")}
        if metrics:
            row.update({"Δ AUROC": Fm.num(r["auroc_delta"], "+.4f"), "SE (AUROC)": Fm.num(r["auroc_se"]),
                        "Δ/SE (AUROC)": _z_text(r["auroc_delta"], r["auroc_se"], r["auroc_z"]),
                        "Δ T-ECE": Fm.num(r["tece_delta"], "+.4f"),
                        "Δ/SE (T-ECE)": _z_text(r["tece_delta"], r["tece_se"], r["tece_z"])})
        rows.append(row)
    fig = (F.delta_matrix_figure(z, "Paired Δ/SE of per-trajectory TPS (row − column); |Δ/SE| > 2 ≈ significant")
           if figure else None)
    return {"table": pd.DataFrame(rows), "raw": t, "z": z, "figure": fig}


#: the ends and the middle of the Δ/SE colours (plotly's RdBu, as the exported heatmap): row worse, equal, row better
_WORSE, _EVEN, _BETTER = (178, 24, 43), (247, 247, 247), (33, 102, 172)


def _z_style(v: float, lim: float) -> str:
    """CSS of one Δ/SE cell: a diverging colour centred on 0 (saturated at ±``lim``), white text on
    the dark end, bold where |Δ/SE| ≥ 2 (called clear on this page)."""
    if not np.isfinite(v):
        return ""
    t = max(-1.0, min(1.0, v / lim))
    end = _BETTER if t > 0 else _WORSE
    rgb = tuple(round(m + abs(t) * (e - m)) for m, e in zip(_EVEN, end))
    ink = "white" if abs(t) > 0.55 else "#262730"
    return f"background-color: rgb{rgb}; color: {ink}" + ("; font-weight: bold" if abs(v) >= 2 else "")


def delta_matrix_table(z: pd.DataFrame):
    """The Δ/SE matrix of compare.z_matrix (entry [row, column] for row − column) as a table coloured
    like a heatmap (a pandas Styler for st.dataframe): drawn in the page at the cost of a table,
    where a plotly heatmap is a second chart the browser draws again after every change of α.
    The heatmap itself stays in the report and on the Export page (report_sections)."""
    vals = z.to_numpy(dtype=float)
    lim = max(float(np.nanmax(np.abs(vals))) if np.isfinite(vals).any() else 1.0, 2.0)
    rows, cols = [F.display_name(n) for n in z.index], [F.display_name(n) for n in z.columns]
    text = pd.DataFrame([[f"{v:+.1f}" if np.isfinite(v) else "" for v in row] for row in vals], index=rows, columns=cols)
    css = pd.DataFrame([[_z_style(v, lim) for v in row] for row in vals], index=rows, columns=cols)
    return text.style.apply(lambda _: css, axis=None)


def _z_text(delta, se, z) -> str:
    try:
        if np.isfinite(float(delta)) and float(se) == 0:
            return "— (identical)" if abs(float(delta)) < 1e-12 else "— (SE 0)"
    except (TypeError, ValueError):
        pass
    return Fm.num(z, "+.1f")


def disagreements(cfg: S.Config, raw: pd.DataFrame, baseline: str) -> list[str]:
    """tpsviz.diagnostics.claims.disagreements of a compare.compare frame, names in bold (Markdown-escaped)."""
    return claims.disagreements(raw, baseline, cfg.unit, name=lambda n: f"**{_md(n)}**")


# ----------------------------------------------------------------------------- scoring lab
def score_curves(cfg: S.Config):
    p = np.linspace(0.001, 0.999, 400)
    pc, _ = clip_forecasts(p, cfg.eps)
    s1, s0 = beta_score_pair(pc, cfg.alpha, cfg.beta)
    c = np.linspace(0.002, 0.998, 400)
    w = tpsviz.omega(c, cfg.alpha, cfg.beta)
    return (F.score_curves_figure(p, s1, s0, cfg.alpha, cfg.beta),
            F.omega_figure(c, w, cfg.alpha, cfg.beta, small=False))


def murphy(cfg: S.Config, data):
    """The Murphy diagram of the selected predictors (tpsviz.diagnostics.murphy.murphy_diagram) and
    its check table: each ω-weighted area against minus the mean score."""
    d = murphy_diagram(data, cfg.predictors, cfg.alpha, cfg.beta)
    c = d.thresholds
    fig = F.murphy_figure(d.curves, Rs.selected_colors(cfg, data), c, tpsviz.omega(c, cfg.alpha, cfg.beta),
                          cfg.alpha, cfg.beta)
    checks = pd.DataFrame({"predictor": [F.display_name(n) for n in d.checks["predictor"]],
                           "ω-weighted area": d.checks["integral"], "mean score": d.checks["mean_score"],
                           "n steps": d.checks["n_steps"]})
    return fig, checks


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


MODIFIED_COLOR = "#8c8c8c"
PHI_MEAN_HELP = ("Φ_mean-gamed trace: the truthful forecasts, except the last report of each run, which is "
                 "changed so that the run's AVERAGE forecast equals the final truthful probability. A one-number "
                 "summary Φ_mean = mean of F_1..F_T then looks better, although one report is dishonest.")


def why_not_auroc(cfg: S.Config, data) -> dict:
    """The three demonstrations of docs/theory.md §5 by tpsviz.diagnostics.demonstrators, cached by results.demos."""
    return Rs.demos(a=Rs.analysis(cfg))


def demo_views(demos: dict, cfg: S.Config, colors: dict) -> list[dict]:
    """Display tables and figures of the demonstrations (numbers from the core's Demonstration)."""
    unit = cfg.unit
    z = normal_quantile(0.95)
    out = []
    # a long unit ("beta-score units (α=1, β=0)") ran the second panel's title off the figure (helper-26)
    short = (lambda c: c) if len(unit) <= 12 else (lambda c: c.replace(f"({unit}/run, ", "(per run, "))
    for key, d in demos.items():
        if isinstance(d, str):
            out.append({"key": key, "error": d})
            continue
        t = d.table
        names = list(t.index)
        cols = [colors.get(n, MODIFIED_COLOR) for n in names]  # a modified forecast is grey, never a predictor's colour
        cmp_ = d.comparison
        diff = (f"Paired Δ TPS (modified − original) = {cmp_['delta']:+.3f} {unit}/run, 95% CI "
                f"{Fm.interval(cmp_['delta'] - z * cmp_['se'], cmp_['delta'] + z * cmp_['se'], '+.3f')} "
                f"({z_text(cmp_['z'])}, n = {cmp_.get('n', '?')} runs).") if np.isfinite(cmp_.get("se", np.nan)) else ""
        if key == "distortion":
            show = pd.DataFrame({"AUROC (↑)": t["auroc"], f"TPS ({unit}/run, ↑)": t["tps_mean"]}, index=names)
            err = {f"TPS ({unit}/run, ↑)": z * t["tps_se"]}
        elif key == "binmean":
            show = pd.DataFrame({"T-ECE (↓)": t["tece_pooled"], f"TPS ({unit}/run, ↑)": t["tps_mean"]}, index=names)
            err = {f"TPS ({unit}/run, ↑)": z * t["tps_se"]}
            ref = cmp_.get("reference", names[0])
            diff = (f"Paired Δ TPS (bin means − {ref}) = {cmp_['delta']:+.3f} {unit}/run, 95% CI "
                    f"{Fm.interval(cmp_['delta'] - z * cmp_['se'], cmp_['delta'] + z * cmp_['se'], '+.3f')} "
                    f"({z_text(cmp_['z'])}).") if np.isfinite(cmp_.get("se", np.nan)) else ""
        else:
            # (E[…]: expectations under the log's true probabilities; short, so the headers fit their column)
            show = pd.DataFrame({"E[Φ_mean Brier] (↑)": t["scal_brier_mean_expected"],
                                 f"E[TPS] ({unit}/run, ↑)": t["tps_expected"]}, index=names)
            err = {}
            diff = (f"Realised on these runs: Φ_mean Brier Δ = {cmp_.get('scal_delta', np.nan):+.4f} ± "
                    f"{cmp_.get('scal_se', np.nan):.4f}, TPS Δ = {cmp_['delta']:+.3f} ± {cmp_['se']:.3f} {unit}/run "
                    f"(± SE; {cmp_.get('n_changed', 0)} runs had their last report changed).")
        disp = show.rename(columns=lambda c: c.replace(f" ({unit}/run, ↑)", " (↑)").replace(f"({unit}/run, ↑)", "(↑)"))
        for c in disp.columns:
            disp[c] = [("≈0" if abs(v) < 1e-9 else f"{v:.4g}") if np.isfinite(v) else Fm.num(v) for v in disp[c]]
        out.append({"key": key, "table": disp.rename_axis("forecast").reset_index(), "explanation": d.explanation,
                    "difference": diff,
                    "figure": F.demo_bars_figure(show.rename(columns=short), "", colors=cols,
                                                 errors={short(c): e for c, e in err.items()})})
    return out


# ----------------------------------------------------------------------------- report / export
def settings_dict(cfg: S.Config, data, src) -> dict:
    """The settings for the report (tpsviz.core.tps.settings_words, with the data and the selection)."""
    w = cfg.words(Rs.censoring_label(cfg))
    info = sample_info(data)
    sample = (f"; a random sample of {info['runs_sampled']:,} of {info['runs_total']:,} runs ({info['rows_sampled']:,} "
              f"of {info['rows_total']:,} step rows; seed {info['seed']})" if info else "")
    return {
        "Data": f"{src.name if src else '?'} ({data.n_trajectories} runs, {data.n_steps} steps, "
                f"{data.n_censored} censored{sample})",
        "Score family": f"{w['score']}; units: {w['unit']}",
        "Weight schedule": w["schedule"],
        "Verdict of the schedule": f"{w['schedule_status']} — {w['schedule_reason']}",
        "Censoring": w["censoring"],
        "ε (clipping)": w["eps"],
        "Bootstrap": f"TPS: {w['bootstrap']}; {Rs.metric_boot_note(cfg)}",
        "Predictors": ", ".join(cfg.predictors),
        "Filters": "; ".join(f"{c} {k} {v}" for c, k, v in cfg.filters) or "none",
        "Recalibrations": ", ".join(cfg.recal) or "none",
    }


def settings_line(cfg: S.Config, data, src) -> str:
    """The settings of a figure in one line (written under an exported PNG)."""
    d = settings_dict(cfg, data, src)
    keys = ("Data", "Score family", "Weight schedule", "Censoring", "ε (clipping)", "Filters", "Recalibrations")
    return "tpsviz · " + " · ".join(f"{k}: {d[k]}" for k in keys if d.get(k) not in (None, "none"))


def report_sections(cfg: S.Config, data) -> list:
    colors = Rs.selected_colors(cfg, data)
    ev = evaluation(cfg)
    secs = [Section("Verdict: which predictor to trust", "First rule that holds: " + "; ".join(
        f"{label}: {rule}" for label, rule in RULES) + ".", table=verdict_table(ev, F.display_name))]
    warn = ev.warnings
    if warn.all():
        secs.append(Section("Warnings", " ".join(warn.all())))
    by, base, pair_on = S.group_choice()
    if by and by in group_columns(data):  # the group comparison chosen on the Overview
        try:
            gv = group_view(cfg, by, base, pair_on)
        except ValueError:
            gv = None
        if gv is not None:
            secs.append(Section(f"Groups of runs by {by}", "TPS and skill of each group on its own runs (skill "
                                "against the group's own success rate).", table=gv["table"]))
            secs.append(Section(f"Each group minus {gv['base']}", " ".join(gv["pairing"].values()),
                                table=gv["diff"]))
    secs += [Section("Leaderboard", f"TPS in {cfg.unit} per trajectory (higher is better, 0 is perfect), 95% "
                    f"{'bootstrap CI over ' + ev.clusters.bootstrap_words() if interval_kind(ev) == 'bootstrap' else 'interval ± 1.96 SE'}"
                    f", {ev.clusters.words()}; "
                    f"skill against the constant forecast F ≡ {ev.reference_rate:.3f} ({ev.reference_rule}); "
                    f"{Rs.metric_boot_note(cfg)}.", leaderboard_figure(ev),
                     report_table(ev, F.display_name))]
    preds = list(cfg.predictors)
    if len(preds) >= 2:
        base = F.default_baseline(preds)
        cmp = compare(cfg, data, base)
        secs.append(Section(f"Paired comparison against {base}", "Δ = predictor − baseline on the same runs.",
                            cmp["figure"], cmp["table"]))
    panels, _ = Rs.reliability("all", None, False, 10, a=Rs.analysis(cfg, predictors=preds[:6]))
    if panels:
        secs.append(Section("Reliability (all steps, complete runs)", "", F.reliability_figure(
            panels, colors, "Reliability diagrams with CORP curves and consistency bands")))
    dec, _ = Rs.decomposition("all", None, False, by_step=False, a=Rs.analysis(cfg, predictors=preds[:6]))
    if len(dec):
        secs.append(Section("CORP decomposition", "mean loss = MCB − DSC + UNC per step.",
                            F.decomposition_figure(dec, colors, cfg.alpha, cfg.beta)))
    secs.append(Section("Mean contribution by step", "", F.step_means_figure(Rs.step_means(a=Rs.analysis(cfg)), colors,
                                                                             cfg.alpha, cfg.beta)))
    if data.n_censored:
        rows = []
        res = {}
        exact_no = L.exact_refusal(data, S.current_source(), (cfg.qz_source, float(cfg.qz_const)))
        for m in ("complete", "simple", "exact", "upper") if exact_no is None else ("complete", "simple", "upper"):
            res[m] = Rs.tps(a=Rs.analysis(cfg, censoring=m))
            for p in res[m].summary.index:
                r = res[m].summary.loc[p]
                rows.append({"predictor": p, "mode": m, "tps_mean": r["tps_mean"], "tps_ci_low": r["tps_ci_low"],
                             "tps_ci_high": r["tps_ci_high"], "n_trajectories": int(r["n_trajectories"])})
        t = pd.DataFrame(rows)
        shown = t.assign(predictor=t["predictor"].map(F.display_name)).rename(columns={
            "mode": "censoring", "tps_mean": f"TPS ({cfg.unit}/run)", "tps_ci_low": "95% CI low",
            "tps_ci_high": "95% CI high", "n_trajectories": "runs"})
        secs.append(Section("TPS by censoring treatment",
                            "The exact rows: " + Rs.censoring_label(cfg, "exact") + "." if exact_no is None else
                            f"No exact rows: {say(exact_no)}.",
                            F.censoring_modes_figure(t, colors, cfg.alpha, cfg.beta), shown))
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
