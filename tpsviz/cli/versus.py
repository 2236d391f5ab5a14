"""``compare`` of two logs or of groups of runs, with or without forecasts: which side succeeds more often,
by how much, with its SE, and the steps, cost and duration of their runs
(:mod:`tpsviz.diagnostics.versus_runs`, docs/theory.md §7.1).
"""

from __future__ import annotations

import os

import numpy as np

from tpsviz.cli.common import Fail, fmt, num, safe
from tpsviz.cli.wording import say
from tpsviz.core.schema import clean_text
from tpsviz.diagnostics.versus_runs import measure_words, success_sentence, versus_runs
from tpsviz.forecasts.versus import versus_own_references

__all__ = ["versus_of", "print_versus", "versus_json", "side_names", "own_references", "print_own_references",
           "own_references_json"]


def side_names(args, candidate: bool, groups=()) -> dict:
    """The words of each side in the sentences: the two logs by file name, a group as "column value"."""
    if not candidate:
        return {g: f"{clean_text(str(args.by), 30)} {g}" for g in groups}
    a, b = (clean_text(os.path.splitext(os.path.basename(str(p)))[0], 32) or "log"
            for p in (args.path, args.candidate))
    if a == b:
        a, b = f"{a} (baseline)", f"{b} (candidate)"
    return {"baseline": f"{a}", "candidate": f"{b}"}


def versus_of(data, by: str, labels, groups: list, base: str, pair_on, cluster_by: str) -> dict:
    """Every group against ``base``: :func:`tpsviz.diagnostics.versus_runs.versus_runs` of each, by group.

    Raises
    ------
    Fail
        For a pairing column that cannot be used.
    """
    try:
        return {g: versus_runs(data, by, base, g, labels, pair_on=pair_on, cluster_by=cluster_by)
                for g in groups if g != base}
    except ValueError as exc:
        raise Fail(say(exc)) from None


def _side_rows(data, labels, groups: list) -> list[tuple]:
    """(group, runs, complete runs, success rate of the complete runs, mean steps) per group."""
    t = data.trajectories
    lab = np.asarray(labels, dtype=object)
    rows = []
    for g in groups:
        keep = lab == g
        done = keep & ~t["censored"].to_numpy(dtype=bool)
        rows.append((g, int(keep.sum()), int(done.sum()),
                     float(t["outcome"].to_numpy(dtype=float)[done].mean()) if done.any() else np.nan,
                     float(t["length"].to_numpy(dtype=float)[keep].mean())))
    return rows


def print_versus(data, labels, groups: list, base: str, tables: dict, names: dict) -> None:
    """The success of each side and, for each group against the base, the sentence and the table of
    success, steps, cost and duration with Δ and SE."""
    print("success and effort of the runs (no forecast needed): success = share of the complete runs that "
          "succeeded; delta = side - base side; a side is said to succeed more often only at |delta/SE| >= 2")
    gw = min(max([len(safe(names.get(g, g), 40)) for g in groups] + [5]), 40)
    header = f"{'side':<{gw}} {'runs':>6} {'complete':>9} {'success':>8} {'steps':>8}"
    print(header)
    print("-" * len(header))
    for g, n, done, rate, steps in _side_rows(data, labels, groups):
        print(f"{safe(names.get(g, g), gw):<{gw}} {n:>6} {done:>9} {fmt(rate, 8, 3)} {fmt(steps, 8, 1)}")
    for g, t in tables.items():
        print()
        print(f"{safe(names.get(g, g), 60)} - {safe(names.get(base, base), 60)}: {safe(t.attrs['pairing'], 300)}")
        header = (f"{'measure':<10} {'column':<14} {'base':>10} {'side':>10} {'delta':>10} {'SE':>9} "
                  f"{'delta/SE':>9} {'n base':>7} {'n side':>7}")
        print(header)
        print("-" * len(header))
        for _, r in t.iterrows():
            d = 3 if r["measure"] == "success" else 2
            print(f"{r['measure']:<10} {safe(r['column'], 14):<14} {fmt(r['mean_a'], 10, d)} {fmt(r['mean_b'], 10, d)} "
                  f"{fmt(r['delta'], 10, d)} {fmt(r['se'], 9, d)} {fmt(r['z'], 9, 2)} {int(r['n_a']):>7} "
                  f"{int(r['n_b']):>7}")
        print(f"  {safe(success_sentence(t, names), 600)}")
        for _, r in t.iterrows():
            if r["measure"] != "success":
                print(f"  {safe(measure_words(r, names, base, g), 400)}")
        missing = [m for m in ("cost", "duration") if m not in set(t["measure"])]
        if missing:
            print(f"  not recorded by the log(s): {', '.join(missing)}")


def versus_json(tables: dict, names: dict) -> dict:
    """The comparisons of :func:`versus_of` for the JSON: per group its pairing, sentence and measures."""
    out = {}
    for g, t in tables.items():
        at = t.attrs
        out[safe(g)] = {
            "pairing": safe(at["pairing"]), "paired_on": None if at["pair_on"] is None else safe(at["pair_on"]),
            "same_tasks": bool(at["same_tasks"]), "why_not_same": safe(at["why_not_same"]),
            "se": {"unit": at["clusters"]["unit"],
                   "column": None if at["clusters"]["column"] is None else safe(at["clusters"]["column"]),
                   "tasks": at["clusters"]["tasks"] and {safe(k): int(v) for k, v in at["clusters"]["tasks"].items()}},
            "censored_left_out_of_success": {safe(k): int(v) for k, v in at["n_censored"].items()},
            "sentence": safe(success_sentence(t, names)),
            "measures": {r["measure"]: {"column": safe(r["column"])}
                         | {k: num(r[k]) for k in ("mean_a", "mean_b", "delta", "se", "z")}
                         | {"paired": bool(r["paired"]), "n_pairs": int(r["n_pairs"]), "n_a": int(r["n_a"]),
                            "n_b": int(r["n_b"]), "n_missing": int(r["n_missing"])}
                         for _, r in t.iterrows()},
        }
    return out


def own_references(data, labels, groups: list, settings) -> dict:
    """:func:`tpsviz.forecasts.versus.versus_own_references`, its reasons in the CLI's words."""
    own = versus_own_references(data, labels, groups, settings)
    return {g: ({"why": say(recs["why"])} if "why" in recs else recs) for g, recs in own.items()}


def print_own_references(own: dict, names: dict) -> None:
    """The lines of :func:`own_references`: one per side and predictor."""
    if not own:
        return
    print("each side against its own references (ref:* fitted on that side's runs only; paired on its runs):")
    for g, recs in own.items():
        if "why" in recs:
            print(f"  {safe(names.get(g, g), 60)}: not formed ({safe(recs['why'], 300)})")
            continue
        for pred, r in recs.items():
            print(f"  {safe(names.get(g, g), 60)}, {safe(pred, 40)}: {safe(r['words'], 400)}")
    print()


def own_references_json(own: dict) -> dict:
    """:func:`own_references` for the JSON."""
    return {safe(g): ({"why": safe(recs["why"])} if "why" in recs else
                      {safe(p): {"reference": safe(r["reference"]), "delta": num(r["delta"]), "se": num(r["se"]),
                                 "z": num(r["z"]), "n_runs": int(r["n_runs"]), "outcome": r["outcome"],
                                 "words": safe(r["words"])} for p, r in recs.items()})
            for g, recs in own.items()}
