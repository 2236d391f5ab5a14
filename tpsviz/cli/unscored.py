"""A command that scored nothing exits 2 and says why and what to do: a CI gate must not pass on
nothing (issue 45, point 4).

``score`` and ``check`` (in memory and out of core), ``compare``, ``monitor`` and ``defer`` raise
:class:`NothingScored` once they know that no predictor got a scored run; :func:`tpsviz.cli.main.main`
prints its message on stderr and exits 2, as for any bad input. With ``--json`` the command first
prints its one JSON object with ``"nothing_scored": {"why", "what_to_do"}`` (:meth:`NothingScored.json`).
"""

from __future__ import annotations

from tpsviz.cli.common import Fail, safe

__all__ = ["NothingScored", "unscored_why", "FORECAST_REMEDY", "refuse_unscored", "unpaired_why"]

#: what to do when no run has a forecast
FORECAST_REMEDY = ("give the log forecasts: probabilities in [0, 1] in a column conf_<name>, a forecasts table with "
                   "--forecasts FILE, or the log's reference forecasters with --references (docs/forecasts.md)")
#: what to do when complete-case mode left out the only runs with a forecast
MODE_REMEDY = "score the censored runs with --censoring simple, exact or upper"


class NothingScored(Fail):
    """No predictor got a scored run: the message says why and what to do (exit 2, like any :class:`Fail`).

    Parameters
    ----------
    why : str
        Why nothing was scored.
    what_to_do : str
        The remedy.
    """

    def __init__(self, why: str, what_to_do: str):
        super().__init__(f"nothing scored: {why}; {what_to_do}")
        self.why, self.what_to_do = why, what_to_do

    def json(self) -> dict:
        """``{"why", "what_to_do"}`` for the command's JSON object."""
        return {"why": safe(self.why, 600), "what_to_do": safe(self.what_to_do, 600)}


def _names(names) -> str:
    shown = [safe(n, 40) for n in list(names)[:5]]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def unscored_why(scored: dict, censoring: str, n_censored: int, what: str = "run") -> NothingScored | None:
    """Why nothing was scored, as the exception to raise, or None when some predictor has a scored run.

    Parameters
    ----------
    scored : dict of str to int
        Scored runs (or pairs, windows' runs …) of every predictor the command reports.
    censoring : str
        The censoring mode (complete-case leaves censored runs out).
    n_censored : int
        Censored runs of the log.
    what : str
        What a predictor needs to be scored, in words ("run", "run scored by both").

    Returns
    -------
    NothingScored or None
    """
    if any(int(n) > 0 for n in scored.values()):
        return None
    names = list(scored)
    if not names:
        return NothingScored("the log has no predictor to score", FORECAST_REMEDY)
    if censoring == "complete" and n_censored:
        return NothingScored(f"complete-case mode leaves out the {n_censored:,} censored runs, and no complete "
                             f"{what} has a forecast of {_names(names)}", MODE_REMEDY)
    return NothingScored(f"no {what} has a forecast of {_names(names)}", FORECAST_REMEDY)


def refuse_unscored(scored: dict, censoring: str, n_censored: int, what: str = "run") -> None:
    """Raise :func:`unscored_why`'s exception, if any.

    Raises
    ------
    NothingScored
    """
    exc = unscored_why(scored, censoring, n_censored, what)
    if exc is not None:
        raise exc


def unpaired_why(table, baseline: str, baseline_runs: int, censoring: str, n_censored: int) -> NothingScored | None:
    """Why a comparison with ``baseline`` compared nothing (no other predictor, a baseline without a
    scored run, or no run scored by both), as the exception to raise, or None.

    Parameters
    ----------
    table : DataFrame
        The paired comparison: one row per other predictor with ``n_runs`` (runs scored by both).
    baseline : str
    baseline_runs : int
        Runs scored for the baseline.
    censoring : str
    n_censored : int

    Returns
    -------
    NothingScored or None
    """
    if not len(table):
        return NothingScored(f"the log has no predictor besides the baseline {safe(baseline, 40)} to compare with it",
                             "add a forecast to compare (docs/forecasts.md), or compare the baseline with the "
                             "log's reference forecasters (--references)")
    if not baseline_runs:
        return unscored_why({baseline: 0}, censoring, n_censored)
    return unscored_why({n: int(r) for n, r in table["n_runs"].items()}, censoring, n_censored,
                        f"run with a forecast of the baseline {safe(baseline, 40)}")
