"""``tpsviz compare``: predictors against a baseline predictor on the same runs (``--baseline NAME``),
groups of runs against a base group (``--by COLUMN``) or two logs (``compare BASELINE CANDIDATE``).

Every delta comes with its SE and delta/SE, computed by the core (:func:`tpsviz.diagnostics.compare.compare`,
:mod:`tpsviz.diagnostics.groups`); ``--baseline`` runs out of core too (:mod:`tpsviz.cli.engine`), and on a
multi-class or continuous-outcome log (:mod:`tpsviz.cli.kinds`).
"""

from __future__ import annotations

import json

import numpy as np

from tpsviz.cli.common import Fail, fmt, name_width, num, safe
from tpsviz.cli.wording import say, say_all
from tpsviz.cli.engine import compare_out_of_core
from tpsviz.cli.kinds import check_options_for, compare_other
from tpsviz.cli.logs import load_log, log_kind, prepare, settings_for
from tpsviz.cli.multiclass import add_label_options
from tpsviz.cli.options import add_engine_options, add_references_option, add_scoring_options, check_args
from tpsviz.cli.output import print_header
from tpsviz.cli.unscored import unpaired_why, unscored_why
from tpsviz.cli.score import engine_for, evaluation_or_exit, refuse_references_out_of_core
from tpsviz.diagnostics.combine import combine_logs, free_column
from tpsviz.cli.versus import (
    own_references, own_references_json, print_own_references, print_versus, side_names, versus_json, versus_of)
from tpsviz.diagnostics.groups import (
    default_base, difference_words, group_difference, group_labels, group_order, group_table, why_missing)
from tpsviz.evaluation.record import reading_json

__all__ = ["add_arguments", "run"]

DESCRIPTION = ("Paired comparison on the same runs, delta = predictor - baseline. TPS: "
               "mean of per-run differences, SE = sd/sqrt(n), clustered by task where runs repeat tasks "
               "(--cluster-by); AUROC: paired trajectory bootstrap over complete runs (pooled over steps).")


def add_arguments(p) -> None:
    """The options of ``compare``."""
    add_scoring_options(p)
    add_references_option(p)
    p.add_argument("candidate", nargs="?", default=None, metavar="CANDIDATE",
                   help="a second log: compare the two logs (candidate - baseline log, PATH "
                        "being the baseline) on their common predictors")
    p.add_argument("--baseline", metavar="NAME", default=None,
                   help="predictor every other one is compared with (may be <name>@<method> "
                        "with --recalibrate); not with --by or a second log")
    p.add_argument("--by", metavar="COLUMN", default=None,
                   help="compare groups of runs given by a metadata column (model, agent, "
                        "prompt, task family): the leaderboard per group and each group minus "
                        "the base group, with SE")
    p.add_argument("--base-group", metavar="GROUP", default=None,
                   help="with --by: the group the others are compared with (default: the first)")
    add_engine_options(p, "compare")
    p.add_argument("--pair-on", metavar="COLUMN", default="auto",
                   help="pair runs by this task column where both groups ran the same tasks "
                        "(default auto: the log's task column, e.g. task/task_id/task_name, with at least 10 "
                        "common tasks; 'none' = unpaired). A column named here is also the cluster of the "
                        "SEs (with --cluster-by auto)")
    add_label_options(p.add_argument_group("multi-class logs (docs/multiclass.md)"))


def run(args) -> int:
    """``compare``: returns the exit code."""
    check_args(args)
    kind = log_kind(args)
    if kind != "binary":
        return compare_other(args, kind)
    check_options_for(args, kind)
    if args.by is not None or args.candidate is not None:
        if args.engine in ("duckdb", "dask"):
            raise Fail(f"--engine {args.engine}: out of core, compare takes --baseline NAME (predictors on the "
                       "same runs); groups of runs (--by) and a second log are compared in memory "
                       "(--engine memory, on logs within TPSVIZ_MAX_ROWS)")
        return _compare_groups(args)
    if args.baseline is None:
        raise Fail("compare needs --baseline NAME (a predictor), --by COLUMN (groups of runs) or "
                   "a second log (compare BASELINE.csv CANDIDATE.csv)")
    engine, why, ds = engine_for(args)
    if engine in ("duckdb", "dask"):
        refuse_references_out_of_core(args, engine)
        return compare_out_of_core(args, ds, why, engine)
    ev = evaluation_or_exit(args, why, complete=False)  # the Evaluation `score` prints; compare reads its TPS alone
    data, settings = ev.data, ev.settings
    if args.baseline not in data.predictors:
        raise Fail(f"unknown baseline {safe(args.baseline)!r}: the log's predictors are "
                   f"{', '.join(safe(p, 40) for p in data.predictors)}")
    try:
        table = ev.compare(args.baseline, metrics=("auroc",))
    except ValueError as exc:
        raise Fail(say(exc)) from None
    nothing = unpaired_why(table, args.baseline, _scored_runs(data, settings, args.baseline), settings.censoring,
                           data.n_censored)
    if args.json:
        print(json.dumps(_baseline_json(args, data, settings, list(ev.notes[len(data.notes):]), table)
                         | ({"nothing_scored": nothing.json()} if nothing else {}), indent=2))
    if nothing is not None:  # exit 2: nothing was compared (main prints why)
        raise nothing
    if args.json:
        return 0
    print_header(data, settings, list(ev.notes))
    print()
    se = table.attrs["se"]
    unit = f"tasks (column {safe(se['column'], 40)})" if se["unit"] == "task" else "trajectories"
    print(f"paired comparison with baseline {args.baseline!r}: delta = predictor - baseline "
          f"(TPS: higher is better; AUROC: complete runs, paired bootstrap over {unit} with "
          f"{settings.n_boot} replicates)")
    nw = name_width(table.index)
    header = (f"{'predictor':<{nw}} {'TPS delta':>10} {'SE':>8} {'delta/SE':>9}   "
              f"{'AUROC delta':>11} {'SE':>8} {'delta/SE':>9} {'runs':>6}")
    print(header)
    print("-" * len(header))
    for pred, r in table.sort_values("tps_delta", ascending=False).iterrows():
        print(f"{safe(pred, nw):<{nw}} {fmt(r.tps_delta, 10, 4)} {fmt(r.tps_se, 8, 4)} "
              f"{fmt(r.tps_z, 9, 2)}   {fmt(r.auroc_delta, 11, 4)} {fmt(r.auroc_se, 8, 4)} "
              f"{fmt(r.auroc_z, 9, 2)} {int(r.n_runs):>6}")
    return 0


def _scored_runs(data, settings, name: str) -> int:
    """Runs with a forecast of ``name`` that the censoring mode scores (complete-case: complete runs)."""
    has = np.bincount(data.steps["traj"].to_numpy(), weights=np.isfinite(data.forecasts(name)),
                      minlength=data.n_trajectories) > 0
    if settings.censoring == "complete":
        has &= ~data.trajectories["censored"].to_numpy(dtype=bool)
    return int(has.sum())


def _baseline_json(args, data, settings, notes, table) -> dict:
    return {
        "baseline": args.baseline,
        "settings": {**settings.describe(), "file": data.source,
                     "n_trajectories": data.n_trajectories, "n_censored": data.n_censored,
                     "notes": [say(n) for n in data.notes + notes], "reading": reading_json(data.reading),
                     "se": table.attrs["se"],
                     "definition": "delta = predictor - baseline on the same runs; TPS: "
                                   "mean of per-run differences, SE = sd/sqrt(n) (by run) or clustered "
                                   "by task (se.unit 'task': sum the centred differences within a task, "
                                   "tasks as the units); AUROC pooled over steps of complete runs, SE from a "
                                   "paired bootstrap over the same units; z = delta/SE"},
        "predictors": {
            pred: {k: num(r[k]) for k in ("tps_delta", "tps_se", "tps_z", "auroc_delta",
                                          "auroc_se", "auroc_z")}
            | {"n_runs": int(r["n_runs"])}
            for pred, r in table.iterrows()
        },
    }


def _group_data(args):
    """(data, settings, q_z, notes, by) of a group comparison: one log split --by a column, or two
    logs combined with a column 'log' (tpsviz.diagnostics.groups.combine_logs)."""
    if args.baseline is not None:
        raise Fail("--baseline compares predictors; with --by or a second log every predictor is "
                   "compared between groups of runs")
    if args.candidate is None:
        data, settings, q_z, notes = prepare(args)
        return data, settings, q_z, notes, args.by
    if args.by is not None:
        raise Fail("give either --by COLUMN or a second log, not both")
    if args.rollouts or args.q_z is not None:
        raise Fail("--rollouts and --q-z refer to the censored runs of one log; they cannot be used with two logs")
    a, notes_a = load_log(args, args.path, allow_empty=True)  # success needs no forecast
    b, notes_b = load_log(args, args.candidate, allow_empty=True)
    column = free_column(a, b)  # "log", or "log_2" … when a log has a column of that name
    try:
        data = combine_logs(a, b, column=column, allow_no_predictor=True)
    except ValueError as exc:
        raise Fail(say(exc)) from None
    notes = [f"baseline: {say(n)}" for n in notes_a] + [f"candidate: {say(n)}" for n in notes_b]
    return data, settings_for(args, data), None, notes, column


def _sides(data, by, settings, q_z):
    """The label of every run, the groups in order and the groups' TPS table (None without forecasts)."""
    try:
        labels = group_labels(data, by)
        groups = group_order(labels, by)
        table = group_table(data, by, settings, q_z=q_z) if data.predictors else None
    except ValueError as exc:
        raise Fail(say(exc)) from None
    return labels, groups, table


def _base_group(args, labels, groups, table) -> str:
    """The base side: --base-group, the baseline log, the group default_base picks, or the largest group."""
    if args.base_group is not None:
        base = args.base_group
    elif args.candidate is not None:
        base = "baseline"
    elif table is not None:
        base = default_base(table)
    else:
        base = max(groups, key=lambda g: int((labels == g).sum()))
    if base not in groups:
        shown = ", ".join(safe(g, 40) for g in groups[:10])
        raise Fail(f"--base-group {safe(base, 40)!r} is not a group of this column; the groups are: {shown}")
    return base


def _compare_groups(args) -> int:
    data, settings, q_z, notes, by = _group_data(args)
    labels, groups, table = _sides(data, by, settings, q_z)
    base = _base_group(args, labels, groups, table)
    names = side_names(args, args.candidate is not None, groups)
    vs = versus_of(data, by, labels, groups, base, args.pair_on, settings.cluster_by)
    diffs, nothing = {}, None
    if table is not None:
        try:  # never paired across different task sets (tau-bench and tau2-bench both number tasks from 0)
            diffs = {g: group_difference(data, by, base, g, settings, q_z=q_z,
                                         pair_on=args.pair_on if vs[g].attrs["same_tasks"] else None)
                     for g in groups if g != base and g in set(table.index.get_level_values("group"))}
        except ValueError as exc:
            raise Fail(say(exc)) from None
        scored = table["n_scored"].fillna(0).groupby(level="predictor", sort=False).sum()
        nothing = unscored_why({n: int(k) for n, k in scored.items()}, settings.censoring, data.n_censored)
    own = own_references(data, labels, groups, settings) if nothing is None else {}
    if args.json:
        obj = (_groups_json(data, settings, notes, by, base, table, diffs) if table is not None
               else _versus_only_json(data, settings, notes, by, base))
        print(json.dumps(obj | {"sides": {safe(k): safe(v) for k, v in names.items()},
                                "versus": versus_json(vs, names), "against_own_references": own_references_json(own)}
                         | ({"nothing_scored": nothing.json()} if nothing else {}), indent=2))
    if nothing is not None:  # exit 2: no group has a scored run (main prints why)
        raise nothing
    if args.json:
        return 0
    print_header(data, settings, data.notes + notes, exclude=(by,))
    print()
    print_versus(data, labels, groups, base, vs, names)
    print()
    if table is None:
        print(f"confidence: {_no_forecast_words(args)}")
        return 0
    _print_groups(table, list(dict.fromkeys(table.index.get_level_values("group"))), by)
    _print_differences(diffs, base, name_width(table.index.get_level_values("predictor")))
    print()
    print_own_references(own, names)
    return 0


def _no_forecast_words(args) -> str:
    """Why the forecasts are not compared (no predictor in the log, or none common to both logs)."""
    if args.candidate is not None:
        return ("not compared: the two logs share no forecast (conf_<name>) or signal; success, steps, cost "
                "and duration above need none")
    return "not compared: the log holds no forecast; success, steps, cost and duration above need none"


def _versus_only_json(data, settings, notes, by, base) -> dict:
    """The JSON's settings when no forecast is compared (the success comparison is under ``versus``)."""
    return {"settings": {**settings.describe(), "file": safe(data.source), "n_trajectories": data.n_trajectories,
                         "notes": say_all(data.notes + notes), "by": safe(by), "base_group": safe(base)},
            "groups": {}, "left_out_groups": {}, "differences": {},
            "confidence": "not compared: no forecast (conf_<name>) or signal common to both sides"}


def _print_groups(table, groups, by) -> None:
    """The leaderboard of each group: TPS, skill against the group's own success rate, runs."""
    se = table.attrs.get("se") or {}
    unit = (f"; each group's SE clustered by task (column {safe(se['column'], 40)})" if se.get("unit") == "task"
            else "; SE by run")
    print(f"groups of {safe(by, 40)}: TPS per trajectory (higher is better) and skill against each "
          f"group's own success rate{unit}")
    nw = max(name_width(table.index.get_level_values("predictor")), 12)
    gw = min(max(len(safe(g, 30)) for g in groups), 30)
    header = (f"{'group':<{gw}} {'predictor':<{nw}} {'TPS':>10} {'± SE':>8} {'skill':>8} "
              f"{'± SE':>7} {'runs':>6} {'success':>8}")
    print(header)
    print("-" * len(header))
    for (g, pred), r in table.iterrows():
        print(f"{safe(g, gw):<{gw}} {safe(pred, nw):<{nw}} {fmt(r.tps_mean, 10, 4)} "
              f"{fmt(r.tps_se, 8, 4)} {fmt(r.skill, 8, 3)} {fmt(r.skill_se, 7, 3)} "
              f"{int(r.n_scored):>6} {fmt(r.success_rate, 8, 3)}")
    small = table.attrs.get("small_groups") or {}
    if small:
        print(f"left out (fewer than 2 runs): {', '.join(f'{safe(g, 30)} ({n})' for g, n in small.items())}")


def _print_differences(diffs, base, nw: int) -> None:
    """Each group minus the base group: TPS and skill deltas with SE, and the words for each."""
    nw = max(nw, 12)
    for g, d in diffs.items():
        print()
        print(f"{safe(g, 40)} - {safe(base, 40)}: {safe(d.attrs['pairing'], 300)}")
        header = (f"{'predictor':<{nw}} {'TPS delta':>10} {'SE':>8} {'delta/SE':>9}   "
                  f"{'skill delta':>11} {'SE':>7} {'delta/SE':>9}")
        print(header)
        print("-" * len(header))
        for pred, r in d.iterrows():
            print(f"{safe(pred, nw):<{nw}} {fmt(r.tps_delta, 10, 4)} {fmt(r.tps_se, 8, 4)} "
                  f"{fmt(r.tps_z, 9, 2)}   {fmt(r.skill_delta, 11, 3)} {fmt(r.skill_se, 7, 3)} "
                  f"{fmt(r.skill_z, 9, 2)}")
        for pred, r in d.iterrows():
            print(f"  {safe(pred, nw)}: {safe(difference_words(r, base, g))}")


def _groups_json(data, settings, notes, by, base, table, diffs) -> dict:
    def rec(r, keys):
        return {k: (num(r[k]) if not isinstance(r[k], (str, bool, np.bool_)) else
                    (bool(r[k]) if isinstance(r[k], (bool, np.bool_)) else safe(r[k])))
                for k in keys}

    tkeys = ("n_runs", "n_complete", "n_censored", "success_rate", "n_scored", "tps_mean",
             "tps_se", "tps_ci_low", "tps_ci_high", "skill", "skill_se", "skill_ci_low",
             "skill_ci_high", "ref_rate")
    dkeys = ("tps_a", "tps_b", "tps_delta", "tps_se", "tps_z", "tps_ci_low", "tps_ci_high",
             "skill_a", "skill_b", "skill_delta", "skill_se", "skill_z", "skill_ci_low",
             "skill_ci_high", "paired", "n_pairs", "n_a", "n_b", "n_left_out", "n_no_task")
    groups: dict = {}
    for (g, pred), r in table.iterrows():
        groups.setdefault(safe(g), {})[safe(pred)] = rec(r, tkeys)
    return {
        "settings": {**settings.describe(), "file": safe(data.source),
                     "n_trajectories": data.n_trajectories, "notes": say_all(data.notes + notes),
                     "by": safe(by), "base_group": safe(base), "se": table.attrs.get("se"),
                     "definition": "per group: mean TPS per run (SE = sd/sqrt(n) by run, or clustered by "
                                   "task when se.unit is 'task') and skill = 1 - "
                                   "TPS/TPS_ref against the group's own success rate; delta = group "
                                   "- base group, unpaired (SE = sqrt(se_a^2 + se_b^2), each clustered as "
                                   "the group's) or paired by task (SE = sd of task differences / sqrt(K))"},
        "groups": groups,
        "left_out_groups": {safe(g): int(n) for g, n in (table.attrs.get("small_groups") or {}).items()},
        "differences": {
            safe(g): {"pairing": safe(d.attrs["pairing"]), "se": d.attrs.get("se"),
                      "predictors": {safe(pred): rec(r, dkeys) | {"why_null": {
                          k: safe(v) for k, v in why_missing(r, base, g).items()}}
                                     for pred, r in d.iterrows()}}
            for g, d in diffs.items()},
    }
