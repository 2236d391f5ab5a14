"""The error every reader raises for input that cannot be used (docs/formats.md, "Messages").

Messages name the file, the row (line) or trajectory and the column; they never echo a cell
value of the file, so a message is safe to show to whoever asked for the file.
"""

from __future__ import annotations

__all__ = ["LogFormatError", "MAX_PROBLEMS"]

MAX_PROBLEMS = 20


class LogFormatError(ValueError):
    """A trajectory log that cannot be used, with every problem found.

    Attributes
    ----------
    source : str
        The file name (or a description of the in-memory source).
    problems : list of str
        One sentence per defect, each naming the row/trajectory and column.
    """

    def __init__(self, source: str, problems: list[str]):
        self.source = source
        problems = list(problems)
        if len(problems) > MAX_PROBLEMS:
            problems = problems[:MAX_PROBLEMS] + [f"… and {len(problems) - MAX_PROBLEMS} more"]
        self.problems = problems
        head = f"{source}: " + ("cannot be used" if len(problems) > 1 else "")
        if len(problems) == 1:
            msg = f"{source}: {problems[0]}"
        else:
            msg = head + f" ({len(problems)} problems):\n" + "\n".join(f"- {p}" for p in problems)
        super().__init__(msg)

