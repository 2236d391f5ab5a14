"""The prompt text of the elicitation and of the replay, read from one editable file
(``prompts.toml`` beside this module, or a file the user names).

Only the text lives in the file; :class:`Prompts` checks its placeholders and gives the digest
that keys the replay's answer cache, so an edited prompt never reuses answers to the old one.
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DEFAULT_PROMPTS", "Prompts", "load_prompts", "read_toml"]

#: the prompt file shipped with tpsviz
DEFAULT_PROMPTS = Path(__file__).with_name("prompts.toml")
#: the result shown for a tool call not run yet when the acting model is asked (optional key)
PENDING_TOOL = "This tool call has not run yet: the task is paused for one question."
#: the optional key of the ``ptrue`` method's prompt (tpsviz.forecasts.methods); a file without it
#: takes the shipped file's
PTRUE_KEY = "ptrue"


@dataclass(frozen=True)
class Prompts:
    """The two prompts that ask a model for P(eventual success).

    Attributes
    ----------
    self_report : str
        Asked of the acting model as one more user turn (no placeholder).
    judge : str
        Asked of a judge model; holds ``{transcript}``, the transcript prefix H_t.
    source : str
        Where the text was read (the file's name, never its content).
    ptrue : str
        The ``ptrue`` method's prompt (a Yes/No question; holds ``{transcript}``); not part of
        :attr:`digest` (its own questions' keys hold it, tpsviz.forecasts.methods.method_prompts).
    pending_tool : str
        The self-report asks right after the agent's turn, before its tool calls have run; a
        provider refuses a conversation whose tool calls have no results, so each pending call
        gets this text as its result in the question's copy of the conversation (optional key).
    """

    self_report: str
    judge: str
    source: str = "prompts.toml"
    pending_tool: str = PENDING_TOOL
    ptrue: str = ""

    def judge_prompt(self, transcript: str) -> str:
        """The judge prompt for one transcript prefix H_t.

        Parameters
        ----------
        transcript : str
            The prefix, already rendered as text.

        Returns
        -------
        str
        """
        return self.judge.replace("{transcript}", transcript)

    @property
    def digest(self) -> str:
        """A SHA-256 of both texts: part of every replay cache key."""
        h = hashlib.sha256()
        for text in (self.self_report, self.judge):
            h.update(text.encode("utf-8"))
            h.update(b"\x00")
        return h.hexdigest()


def read_toml(p: Path, what: str) -> dict:
    """The TOML document of file ``p``; ValueError ``"<what> <name>: …"`` when it cannot be read or
    is not TOML (the file's name and the parser's line and column, never its content).

    Parameters
    ----------
    p : Path
    what : str
        What the file is, for the message (``"prompt file"``, ``"price file"``).

    Returns
    -------
    dict
    """
    try:
        return tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{what} {p.name}: cannot be read ({type(e).__name__})") from None
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{what} {p.name}: not valid TOML ({e})") from None


def load_prompts(path: str | Path | None = None) -> Prompts:
    """Read the prompts from ``path`` (default :data:`DEFAULT_PROMPTS`).

    Parameters
    ----------
    path : str or Path, optional
        A TOML file with the text keys ``self_report`` and ``judge`` (and optionally
        ``pending_tool`` and ``ptrue``; a file without ``ptrue`` takes the shipped file's).

    Returns
    -------
    Prompts

    Raises
    ------
    ValueError
        The file cannot be read as TOML, a key is missing or not text, or ``judge`` lacks the
        ``{transcript}`` placeholder. The message names the file and the key, never its content.
    """
    p = Path(path) if path is not None else DEFAULT_PROMPTS
    doc = read_toml(p, "prompt file")
    texts = {}
    for key in ("self_report", "judge"):
        value = doc.get(key)
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"prompt file {p.name}: key {key!r} is missing or not a non-empty text")
        texts[key] = value.strip() + "\n"
    if "{transcript}" not in texts["judge"]:
        raise ValueError(f"prompt file {p.name}: 'judge' must hold the placeholder {{transcript}}")
    pending = doc.get("pending_tool", PENDING_TOOL)
    if not isinstance(pending, str) or not pending.strip():
        raise ValueError(f"prompt file {p.name}: key 'pending_tool' must be a non-empty text")
    ptrue = doc.get(PTRUE_KEY)
    if ptrue is None and p != DEFAULT_PROMPTS:
        ptrue = load_prompts().ptrue
    if not isinstance(ptrue, str) or "{transcript}" not in ptrue:
        raise ValueError(f"prompt file {p.name}: key {PTRUE_KEY!r} must be a text holding the placeholder {{transcript}}")
    return Prompts(texts["self_report"], texts["judge"], p.name, pending.strip(), ptrue.strip() + "\n")
