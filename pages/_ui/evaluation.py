"""The :class:`~tpsviz.evaluation.record.Evaluation` of the sidebar's settings: what ``tpsviz.evaluate``
returns for the same log and settings, assembled from the results the dashboard caches part by part
(``results.py``: TPS and skill under the score's settings, the metrics under ε and their bootstrap,
the verdict tests under the labels), so an α nudge recomputes only the parts that depend on α.

The Overview and the report read this one object; its tables are built in the core
(:mod:`tpsviz.evaluation.tables`).
"""

from __future__ import annotations

from tpsviz.evaluation.record import BinaryEvaluation

from . import results as Rs
from .loading import prepared
from .state import Config, current, current_source

__all__ = ["evaluation"]


def evaluation(cfg: Config | None = None, *, ci: bool = True, verdicts: bool = True) -> BinaryEvaluation:
    """The Evaluation of the current log under ``cfg`` (default: the sidebar's settings).

    Parameters
    ----------
    cfg : Config, optional
    ci : bool
        With the bootstrap: TPS and skill CIs (``results.tps``, ``results.skill``) and the metrics'
        CIs (the sidebar's metric bootstrap). False: point estimates only (TPS ± z·SE, skill and
        the metrics without a bootstrap), what a large log shows first.
    verdicts : bool
        Decide the verdicts (``results.verdicts``, their tests cached under the labels only);
        False leaves them undecided (an empty dict), for a page that draws the leaderboard first.

    Returns
    -------
    Evaluation
        Its metrics carry CIs where ``ci`` (``Evaluation.compute`` gives points); every other
        number is ``tpsviz.evaluate``'s for the same settings (tests/app/test_pages.py).
    """
    cfg = cfg or current()
    a, points = Rs.analysis(cfg), Rs.analysis(cfg, n_boot=0)
    src = current_source()
    data, _ = prepared(src, a.filters, a.recal, fit=a.fit)
    result = Rs.tps(a=a) if ci else Rs.tps_points(a=a)
    skill = Rs.skill(a=a if ci else points)
    # no warning depends on a bootstrap (results.caveats): from points, a large log warns before its CIs
    warn = Rs.caveats(a=a if ci else points)
    return BinaryEvaluation.from_parts(
        data, a.settings, result, Rs.metrics(a=Rs.analysis(cfg, n_boot=Rs.metric_boot(cfg) if ci else 0)), skill, warn,
        verdicts=Rs.verdicts(a) if verdicts else None, excess_movement=Rs.updating(a=a),
        q_z=Rs.Inputs(data, src, a.qz).q_z(settings=a.settings), engine_reason="the dashboard")
