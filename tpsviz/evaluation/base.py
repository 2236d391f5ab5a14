"""The one type :func:`tpsviz.evaluate` returns, whatever the log's outcome kind: :class:`Evaluation`.

A binary log gives a :class:`~tpsviz.evaluation.record.BinaryEvaluation` (verdicts, skill, the
usual metrics); a multi-class log a :class:`~tpsviz.evaluation.outcome_kinds.MulticlassEvaluation`
(TPS-k and one-vs-rest reliability); a continuous-outcome log a
:class:`~tpsviz.evaluation.outcome_kinds.ContinuousEvaluation` (TPS-CRPS and PIT). Each answers the
same questions in the same words: ``kind``, ``summary``, ``order``, ``leaderboard``,
``verdict_sentences()``, ``to_json()`` (the object ``score --json`` prints), ``to_html()`` (the
offline report) and ``_repr_html_`` (the notebook view).
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from tpsviz.core.wording import PYTHON, Wording
from tpsviz.report.html import html_table

__all__ = ["Evaluation"]


class Evaluation:
    """What :func:`tpsviz.evaluate` returns: every report of ``python -m tpsviz score`` on one log.

    Subclasses set :attr:`kind` and give :attr:`summary` (one row per predictor, ``tps_mean``
    first), :attr:`leaderboard`, :meth:`verdict_sentences`, :meth:`to_json`, :meth:`to_html` and
    :meth:`headline` (the first line of the notebook view).
    """

    #: ``"binary"``, ``"multiclass"`` or ``"continuous"``
    kind: str = ""

    @property
    def summary(self) -> pd.DataFrame:
        """The score of every predictor (``tps_mean``, ``tps_se``, CI, counts), in the log's order."""
        raise NotImplementedError

    @property
    def order(self) -> list:
        """The predictors, best mean score first (a missing mean last; ties in the log's order)."""
        s = self.summary["tps_mean"].astype(float).fillna(-np.inf)
        return list(s.sort_values(ascending=False, kind="stable").index)

    @property
    def leaderboard(self) -> pd.DataFrame:
        """One row per predictor, best first."""
        raise NotImplementedError

    def verdict_sentences(self) -> list[str]:
        """What the evaluation says of every predictor, one plain sentence each, in the log's order."""
        raise NotImplementedError

    def to_json(self, wording: Wording = PYTHON) -> dict:
        """The object ``python -m tpsviz score LOG --json`` prints."""
        raise NotImplementedError

    def to_html(self, title: str | None = None) -> str:
        """The offline HTML report, a complete document."""
        raise NotImplementedError

    def headline(self) -> str:
        """The log and the settings in one line of text (the notebook view's first line)."""
        raise NotImplementedError

    def display_table(self) -> pd.DataFrame:
        """The leaderboard as text cells (the notebook view's table)."""
        return self.leaderboard.map(_cell).reset_index()

    def _repr_html_(self) -> str:
        """A compact notebook view: the log, the settings, the sentences and the leaderboard."""
        esc = html.escape
        items = "".join(f"<li>{esc(s)}</li>" for s in self.verdict_sentences())
        return (f"<div class='tpsviz-evaluation'><p><b>tpsviz evaluation</b> of {esc(self.headline())}</p>"
                f"<ul>{items}</ul>{html_table(self.display_table())}</div>")


def _cell(v) -> str:
    """A leaderboard value as text: 4 significant digits, n/a for a missing number."""
    if isinstance(v, (float, np.floating)):
        return "n/a" if np.isnan(v) else f"{float(v):.4g}"
    return str(v)
