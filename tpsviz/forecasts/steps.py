"""Which agent steps the replay asks (issue 47 point 4; docs/forecasts.md §3).

Asking every agent step of every run costs a prompt per step, each holding the whole prefix H_t.
A step rule asks fewer: ``every:K`` (steps 1, 1 + K, 1 + 2K, …), ``first:N`` (steps 1..N),
``last:N`` (the last N steps), ``sample:N`` (N steps drawn at random per run, from a generator
seeded by the seed and the run's id, so a run's draw is the same whichever other runs are replayed).

The table still has one row per agent step (:func:`carry_forward`): a step not asked takes the
forecast of the last asked step before it that has one, which uses only H_s with s < t, so no
later message reaches it; a step with no asked step before it stays missing. The column
:data:`ASKED` marks the asked rows; ``score`` joins only the ``conf_*`` columns, so it ignores it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from tpsviz.core.errors import SettingError
from tpsviz.core.inference import DEFAULT_SEED
from tpsviz.core.wording import setting

__all__ = ["ASKED", "StepRule", "parse_steps", "asked_steps", "keep_asked", "carry_forward", "CarryCounts"]

#: the table's column marking the rows whose step was asked (True) or carried or missing (False)
ASKED = "asked"
_RULE = re.compile(r"^\s*(every|first|last|sample)\s*:\s*([+-]?\d+)\s*$")
_KINDS = "every:K, first:N, last:N or sample:N (K, N whole numbers from 1)"


@dataclass(frozen=True)
class StepRule:
    """A rule choosing the agent steps to ask.

    Attributes
    ----------
    kind : str
        ``every``, ``first``, ``last`` or ``sample``.
    n : int
        K or N, at least 1.
    """

    kind: str
    n: int

    def __str__(self) -> str:
        return f"{self.kind}:{self.n}"

    def steps(self, trajectory_id: str, T: int, seed: int | None = None) -> list[int]:
        """The steps of a run of ``T`` agent steps to ask, ascending.

        Parameters
        ----------
        trajectory_id : str
            The run's id: with ``seed``, it seeds the draw of ``sample``.
        T : int
            The run's agent steps.
        seed : int, optional
            Default :data:`tpsviz.core.inference.DEFAULT_SEED`.

        Returns
        -------
        list of int
        """
        if self.kind == "every":
            return list(range(1, T + 1, self.n))
        if self.kind == "first":
            return list(range(1, min(self.n, T) + 1))
        if self.kind == "last":
            return list(range(max(1, T - self.n + 1), T + 1))
        if self.n >= T:
            return list(range(1, T + 1))
        digest = hashlib.sha256(str(trajectory_id).encode("utf-8", "surrogatepass")).digest()
        rng = np.random.default_rng([DEFAULT_SEED if seed is None else int(seed), int.from_bytes(digest[:8], "big")])
        return sorted(int(t) + 1 for t in rng.choice(T, size=self.n, replace=False))


def parse_steps(spec: str | None) -> StepRule | None:
    """The step rule written ``every:K``, ``first:N``, ``last:N`` or ``sample:N`` (None: every step).

    Parameters
    ----------
    spec : str or None

    Returns
    -------
    StepRule or None

    Raises
    ------
    SettingError
        For any other form, or K, N below 1 (``every:0``, ``last:-1``, ``foo:3``).

    Examples
    --------
    >>> str(parse_steps("every:3"))
    'every:3'
    """
    if spec is None:
        return None
    m = _RULE.match(str(spec))
    if m is None:
        raise SettingError(f"{setting('steps', spec)}: the steps asked are written {_KINDS}")
    n = int(m.group(2))
    if n < 1:
        raise SettingError(f"{setting('steps', spec)}: {m.group(1)}:{n} asks no step; {_KINDS}")
    return StepRule(m.group(1), n)


def asked_steps(transcripts, rule: StepRule | None, seed: int | None = None) -> set[tuple[str, int]]:
    """The (trajectory_id, step) pairs asked: every agent step without a rule.

    Parameters
    ----------
    transcripts : list of tpsviz.io.harness.transcripts.Transcript
    rule : StepRule or None
    seed : int, optional

    Returns
    -------
    set of (str, int)
    """
    out = set()
    for tr in transcripts:
        steps = range(1, tr.steps + 1) if rule is None else rule.steps(tr.trajectory_id, tr.steps, seed)
        out.update((tr.trajectory_id, t) for t in steps)
    return out


def keep_asked(questions: list, asked: set) -> list:
    """The questions whose (trajectory_id, step) is in ``asked``, in their order."""
    return [q for q in questions if (q.trajectory_id, q.step) in asked]


@dataclass(frozen=True)
class CarryCounts:
    """What :func:`carry_forward` did, in rows of the table.

    Attributes
    ----------
    asked : int
        Rows whose step was asked (with or without a readable answer).
    carried : int
        Rows not asked that took the forecast of an earlier asked step.
    missing : int
        Rows not asked with no earlier asked step holding a forecast: before the first asked step
        (or after asked steps whose replies held none).
    """

    asked: int
    carried: int
    missing: int


def carry_forward(table: pd.DataFrame, transcripts, columns: list[str] | None = None
                  ) -> tuple[pd.DataFrame, CarryCounts]:
    """The table of every agent step from the table of the asked steps.

    A step not asked takes, in each forecast column, the value of the last asked step before it in
    the same run that has one (the past only); a step with none stays missing.

    Parameters
    ----------
    table : DataFrame
        ``trajectory_id, step`` and ``columns``, one row per asked step.
    transcripts : list of Transcript
        The runs replayed: the table gets one row per agent step of each.
    columns : list of str, optional
        The forecast columns to carry; default every ``conf_*``, ``raw_*`` and ``unc_*`` column.

    Returns
    -------
    table : DataFrame
        ``trajectory_id, step, columns…, asked`` sorted by (trajectory_id, step).
    counts : CarryCounts
        Carried and missing count the rows whose first column was filled or left missing.
    """
    if columns is None:
        columns = [c for c in table.columns if str(c).startswith(("conf_", "raw_", "unc_"))]
    grid = pd.DataFrame({"trajectory_id": pd.Series([tr.trajectory_id for tr in transcripts
                                                     for _ in range(tr.steps)], dtype=object),
                         "step": np.array([t for tr in transcripts for t in range(1, tr.steps + 1)], dtype=np.int64)})
    side = table[["trajectory_id", "step", *columns]].assign(**{ASKED: True})
    out = grid.merge(side, on=["trajectory_id", "step"], how="left")
    out[ASKED] = out[ASKED].fillna(False).astype(bool)
    out = out.sort_values(["trajectory_id", "step"], kind="stable").reset_index(drop=True)
    for c in columns:
        carried = out[c].where(out[ASKED]).groupby(out["trajectory_id"], sort=False).ffill()
        out[c] = out[c].where(out[ASKED], carried).astype(np.float64)
    first = out[columns[0]] if columns else pd.Series(np.nan, index=out.index)
    not_asked = ~out[ASKED]
    counts = CarryCounts(int(out[ASKED].sum()), int((not_asked & first.notna()).sum()),
                         int((not_asked & first.isna()).sum()))
    return out[["trajectory_id", "step", *columns, ASKED]], counts
