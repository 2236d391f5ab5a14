"""The blocks of a binary log's report that several commands print: the header (the log, how it was
read, the score's settings in words), the TPS table and the paired differences. Used by ``score`` and
``compare`` in memory and by the out-of-core engine (the JSON records: :mod:`tpsviz.evaluation.record`)."""

from __future__ import annotations

import numpy as np

from tpsviz.cli.common import fmt, interval, name_width, safe
from tpsviz.cli.wording import say
from tpsviz.core.clusters import run_clusters
from tpsviz.core.tps import settings_words

__all__ = ["print_header", "print_reading", "print_tps_table", "print_paired_tps"]


def print_header(data, settings, notes, engine: str | None = None, exclude=()) -> None:
    """The log (runs, steps, censored), how it was read, the settings in words, the unit of the SEs and
    the notes.

    Parameters
    ----------
    data : TrajectoryData
    settings : ScoreSettings
    notes : sequence of str
        Every note: the log's (``data.notes``) and the command's.
    engine : str, optional
        Why the memory engine scored it (``score``).
    exclude : collection of str
        Columns that cannot be the task (the grouping column of ``compare --by``).
    """
    v = settings.schedule.verdict
    print(f"{safe(data.source)}: {data.n_trajectories} trajectories, {data.n_steps} steps, "
          f"{data.n_censored} censored")
    if engine:
        print(f"engine: memory ({safe(say(engine))})")
    print_reading(data.reading)
    w = settings_words(settings)
    print(f"score: {w['score']}, {w['unit']}; {w['direction']}")
    print(f"schedule: {w['schedule']} -> {w['schedule_status']}")
    if not v.is_strictly_proper:
        print(f"  note: {w['schedule_reason']}")
    print(f"censoring: {w['censoring']}; eps = {w['eps']}")
    c = run_clusters(data, settings.cluster_by, exclude)
    boot = (f"{settings.n_boot} bootstrap replicates over {c.bootstrap_words()}, seed {settings.seed}, "
            f"{settings.interval} intervals"
            if settings.n_boot else "bootstrap off (intervals: mean ± z·SE)")
    print(f"uncertainty: {safe(c.line())}; {boot}")
    for note in notes:
        print(f"note: {safe(say(note))}")


def print_reading(reading: dict) -> None:
    """How a harness log was read: the treatment table with counts, and forecast sources.

    Parameters
    ----------
    reading : dict
        ``TrajectoryData.reading`` (nothing is printed for a plain table).
    """
    if "treatment" not in reading:
        return
    print(f"read as {reading['format']}: {reading['runs_read']} runs read, {reading['runs_kept']} kept")
    print(f"  {'termination reason':<26} {'treatment':<10} {'runs':>6}")
    for row in reading["treatment"]:
        mark = "" if row["default"] else "  (set by --treat)"
        print(f"  {safe(row['reason'], 26):<26} {row['treatment']:<10} {row['runs']:>6}{mark}")
    for col, src in reading.get("forecasts", {}).items():
        print(f"  forecast {safe(col)}: {safe(src)}")


def print_tps_table(s, pct: int, nw: int, count_width: int = 6):
    """The TPS table, best first.

    Parameters
    ----------
    s : DataFrame
        The TPS summary (``TPSResult.summary`` or the out-of-core one).
    pct : int
        The confidence level in percent.
    nw, count_width : int
        Widths of the predictor column and of the count columns.

    Returns
    -------
    Index
        The predictors in the table's order.
    """
    print("TPS per trajectory (higher is better, 0 is perfect)")
    cw = count_width
    header = (f"{'predictor':<{nw}} {'mean':>10} {'± SE':>8} {f'{pct}% CI':>21} {'per step':>9} "
              f"{'runs':>{cw}} {'cens':>{cw - 1}} {'clip':>{cw - 1}}")
    print(header)
    print("-" * len(header))
    order = s["tps_mean"].fillna(-np.inf).sort_values(ascending=False, kind="stable").index
    for pred in order:
        r = s.loc[pred]
        ci = interval(r.tps_ci_low, r.tps_ci_high, 21)
        print(f"{safe(pred, nw):<{nw}} {fmt(r.tps_mean, 10, 4)} {fmt(r.tps_se, 8, 4)} {ci} "
              f"{fmt(r.tps_step_mean, 9, 4)} {int(r.n_trajectories):>{cw}} {int(r.n_censored):>{cw - 1}} "
              f"{int(r.n_clipped):>{cw - 1}}")
    return order


def print_paired_tps(table, count_width: int = 6) -> None:
    """The paired TPS differences against a baseline, best first.

    Parameters
    ----------
    table : DataFrame
        Index predictor; ``tps_delta``, ``tps_se``, ``tps_z``, ``n_runs``
        (:func:`tpsviz.engines.runsums.paired_tps`).
    count_width : int
        Width of the runs column.
    """
    nw = name_width(table.index)
    header = f"{'predictor':<{nw}} {'TPS delta':>10} {'SE':>8} {'delta/SE':>9} {'runs':>{count_width}}"
    print(header)
    print("-" * len(header))
    for pred, r in table.sort_values("tps_delta", ascending=False).iterrows():
        print(f"{safe(pred, nw):<{nw}} {fmt(r.tps_delta, 10, 4)} {fmt(r.tps_se, 8, 4)} "
              f"{fmt(r.tps_z, 9, 2)} {int(r.n_runs):>{count_width},}")
