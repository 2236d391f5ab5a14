"""Where the DuckDB main pass spends its time (issue 12): the pass's own SQL
(`tpsviz.engines.sql.pass_sql`) with groups of aggregates left out, against the bare query
of bench_outofcore.py, on one dataset, alternating the variants ``--reps`` times.

  bare         one GROUP BY computing the per-run log TPS of every conf_ column (the baseline)
  full         the main pass as the engine runs it
  no_argmax    without the last forecast of each predictor (arg_max)
  no_checks    the scores, present/clipped counts and last forecasts only (no check aggregates)
  scores_only  the A1/A0 sums only
  count_only   count(*) per run only (reading and grouping the ids)

Prints each variant's seconds and its median as a ratio of the bare query's median.

Make a dataset first: .venv/bin/python bench/make_dataset.py /tmp/ds --rows 2e7 --files 10 --split

Usage: .venv/bin/python bench/bench_pass_ablation.py DATASET_DIR [--reps 3] [--variants bare,full,...]
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def variants(folder: str) -> tuple[dict, object]:
    """The SQL of every variant, and the engine's connection."""
    from tpsviz.io.dataset import open_dataset
    from tpsviz.engines import duck, sql as engine_sql
    from tpsviz.core.tps import ScoreSettings

    settings = ScoreSettings()
    ds = open_dataset(folder)
    con, _spill, source, plan = duck.open_plan(ds)
    full = engine_sql.pass_sql(plan, source, settings, False, False)
    aggs = engine_sql.pass_aggregates(plan, settings, False)
    head, rest = full.split("SELECT tid, ", 1)
    body = rest[len(", ".join(aggs)):]

    def keep(kept: list[str]) -> str:
        return head + "SELECT tid, " + ", ".join(kept) + body

    files = [str(p) for p in ds.files]
    p = "greatest(least({c}, 1 - 1e-6), 1e-6)"
    bare = ("SELECT trajectory_id, " + ", ".join(
        f"sum(CASE WHEN outcome = 1 THEN ln({p.format(c=c)}) ELSE ln(1 - {p.format(c=c)}) END)" for c in plan.conf)
        + f" FROM read_parquet({files}) GROUP BY trajectory_id")
    return {
        "bare": bare,
        "full": full,
        "no_argmax": keep([a for a in aggs if "arg_max" not in a]),
        "no_checks": keep([a for a in aggs if re.search(r"AS (a1|a0|np|last|cl)_", a) or a == "count(*) AS n"]),
        "scores_only": keep([a for a in aggs if re.search(r"AS (a1|a0)_", a)]),
        "count_only": keep(["count(*) AS n"]),
    }, con


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--variants", default="bare,full,no_argmax,no_checks,scores_only,count_only")
    args = ap.parse_args()
    import duckdb

    sql, con = variants(args.folder)
    names = args.variants.split(",")
    times = {n: [] for n in names}
    for _ in range(args.reps):
        for n in names:
            c = duckdb.connect(config={"threads": 2}) if n == "bare" else con  # (bare: as bench_outofcore)
            t = time.perf_counter()
            c.sql(sql[n]).to_arrow_table()
            times[n].append(time.perf_counter() - t)
    base = statistics.median(times["bare"]) if "bare" in times else None
    for n in names:
        med = statistics.median(times[n])
        ratio = f"  {med / base:.1f}x bare" if base else ""
        print(f"{n:12s} " + " ".join(f"{x:6.2f}" for x in times[n]) + f"  median {med:.2f} s{ratio}")


if __name__ == "__main__":
    main()
