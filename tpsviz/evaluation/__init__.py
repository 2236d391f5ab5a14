"""``tpsviz.evaluate``: what ``python -m tpsviz score`` computes, as one Python object.

:func:`evaluate` takes any log a user holds (a path, a dataset folder, an open file, a DataFrame or
pyarrow Table, a log already read), of any outcome kind, and returns an
:class:`~tpsviz.evaluation.base.Evaluation`: for a binary log (in memory, or out of core for a dataset above ``TPSVIZ_MAX_ROWS``) the TPS summary and per-trajectory
scores, the usual metrics, skill against the base rate, the verdict of every predictor
(docs/theory.md §8), the excess movement of rational updating, warnings and notes; for a multi-class
or continuous-outcome log TPS-k or TPS-CRPS with its calibration check. ``to_json()`` is the object
``score --json`` prints, ``to_html()`` the offline report (docs/api.md).

``options`` holds the two groups of settings (:class:`Settings`, :class:`ReadSettings`),
``front_door`` opens the source and dispatches by kind, ``settings`` checks settings and reads a
binary log, ``base`` is the one Evaluation type, ``record`` the binary log's, ``outcome_kinds`` the
others', ``tables`` writes an evaluation as tables of text cells (the dashboard's Overview, the
reports), ``report`` builds its HTML report. Builds on every layer below ``cli``; the command line
uses it.
"""

from __future__ import annotations

from tpsviz.evaluation.base import Evaluation
from tpsviz.evaluation.front_door import NothingToScore, evaluate
from tpsviz.evaluation.options import ReadSettings, Settings
from tpsviz.evaluation.out_of_core import DatasetEvaluation
from tpsviz.evaluation.outcome_kinds import ContinuousEvaluation, MulticlassEvaluation
from tpsviz.evaluation.record import BinaryEvaluation

__all__ = ["evaluate", "Evaluation", "BinaryEvaluation", "MulticlassEvaluation", "ContinuousEvaluation",
           "DatasetEvaluation", "Settings", "ReadSettings", "NothingToScore"]
