"""The errors the core raises for input that cannot be used (docs/formats.md, "Messages").

Messages name the file, the row (line) or trajectory and the column; they never echo a cell
value of the file, so a message is safe to show to whoever asked for the file. A setting is
named by a marker (:func:`tpsviz.core.wording.setting`): ``str(error)`` names it as Python does,
and each front end words ``error.template`` with its own words (:func:`tpsviz.core.wording.word`).
"""

from __future__ import annotations

from tpsviz.core.wording import text, word

__all__ = ["LogFormatError", "SettingError", "MAX_PROBLEMS"]

MAX_PROBLEMS = 20


def _message(source: str, problems: list) -> str:
    if len(problems) == 1:
        return f"{source}: {problems[0]}"
    return f"{source}: {'cannot be used' if problems else ''} ({len(problems)} problems):\n" + "\n".join(f"- {p}" for p in problems)


class LogFormatError(ValueError):
    """A trajectory log that cannot be used, with every problem found.

    Attributes
    ----------
    source : str
        The file name (or a description of the in-memory source).
    problems : list of str
        One sentence per defect, each naming the row/trajectory and column; a problem that names
        a setting is a :class:`tpsviz.core.wording.Text` (worded for Python, with its template).
    template : str
        The message with its settings' markers, for a front end to word.
    """

    def __init__(self, source: str, problems: list[str]):
        self.source = source
        problems = list(problems)
        if len(problems) > MAX_PROBLEMS:
            problems = problems[:MAX_PROBLEMS] + [f"… and {len(problems) - MAX_PROBLEMS} more"]
        self.problems = [text(p) for p in problems]
        self.template = _message(source, [getattr(p, "template", p) for p in self.problems])
        super().__init__(word(self.template))

    def __reduce__(self):  # (pickled with its problems' templates)
        return (LogFormatError, (self.source, self.problems))


class SettingError(ValueError):
    """A setting that cannot apply (or a value that cannot be one), naming the setting.

    Parameters
    ----------
    template : str
        The message, naming settings by :func:`tpsviz.core.wording.setting` markers.

    Attributes
    ----------
    template : str
        For a front end to word (:func:`tpsviz.core.wording.word`); ``str()`` is worded for Python.
    """

    def __init__(self, template: str):
        self.template = str(getattr(template, "template", template))
        super().__init__(word(self.template))

    def __reduce__(self):
        return (SettingError, (self.template,))
