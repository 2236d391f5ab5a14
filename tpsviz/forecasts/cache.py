"""The replay's answer cache: one file per answer on disk, so a killed replay resumes where it
stopped (docs/forecasts.md §3).

An answer is keyed by the SHA-256 of (the prompt's transcript prefix, the model's name, the prompt
file's digest): the same prefix asked of the same model with the same prompt text is never asked
twice, and an edited prompt or another model never reuses an answer. A file holds the reply's text
only (no key, no address, no setting), cut to :data:`REPLY_CHARS` characters (:func:`cut_reply`: a
provider that sends megabytes fills no disk); it is written to a temporary name and renamed, so a
kill leaves either the whole answer or none.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

__all__ = ["AnswerCache", "answer_key", "write_atomic", "cut_reply", "REPLY_CHARS", "CUT_MARK"]

#: the most characters of a reply kept: ample for the probability and the words around it
REPLY_CHARS = 4000
#: what stands for the characters cut from the middle of a long reply (no digit: it adds no number)
CUT_MARK = "\n[… cut …]\n"


def cut_reply(reply: str, bound: int = REPLY_CHARS) -> str:
    """``reply`` if it has at most ``bound`` characters, else its beginning and its end (where a
    reply gives its answer) with :data:`CUT_MARK` between them, ``bound`` characters in all.

    Parameters
    ----------
    reply : str
    bound : int

    Returns
    -------
    str

    Examples
    --------
    >>> len(cut_reply("x" * 20_000))
    4000
    >>> cut_reply("probability: 0.7")
    'probability: 0.7'
    """
    if len(reply) <= bound:
        return reply
    keep = bound - len(CUT_MARK)
    head = keep // 2
    return reply[:head] + CUT_MARK + reply[len(reply) - (keep - head):]


def answer_key(prefix: str, model: str, prompt_digest: str) -> str:
    """The cache key of one question.

    Parameters
    ----------
    prefix : str
        The rendered transcript prefix H_t.
    model : str
        The model's name, ``provider/model``.
    prompt_digest : str
        :attr:`tpsviz.forecasts.prompts.Prompts.digest`.

    Returns
    -------
    str
        64 hexadecimal digits.
    """
    h = hashlib.sha256()
    for part in (prefix, model, prompt_digest):
        data = part.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename: a
    reader sees the old file or the new one, never a part.

    Parameters
    ----------
    path : Path
    data : bytes
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class AnswerCache:
    """A folder of answers, ``<key[:2]>/<key>.json`` each holding ``{"reply": text}`` and, where
    the provider reported them, ``"usage": {"input": …, "cached": …, "output": …}``.

    Parameters
    ----------
    folder : str or Path
        Created when the first answer is stored.
    """

    def __init__(self, folder):
        self.folder = Path(folder)
        self.unreadable = 0  # entries found damaged (asked again)

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> str | None:
        """The stored reply of ``key``, or None (not asked yet, or an entry that cannot be read,
        counted in :attr:`unreadable` and asked again)."""
        p = self._path(key)
        try:
            data = p.read_bytes()
        except FileNotFoundError:
            return None
        except OSError:
            self.unreadable += 1
            return None
        try:
            reply = json.loads(data.decode("utf-8"))["reply"]
        except (UnicodeDecodeError, ValueError, KeyError, TypeError):
            self.unreadable += 1
            return None
        if not isinstance(reply, str):
            self.unreadable += 1
            return None
        return reply

    def put(self, key: str, reply: str, usage: dict | None = None) -> None:
        """Store one reply (atomically), cut to :data:`REPLY_CHARS` characters (:func:`cut_reply`),
        with the tokens the provider reported for it (``usage``: ``input``, ``cached``, ``output``
        whole numbers; :func:`tpsviz.forecasts.prices.token_usage`), so a run from the cache can
        still say what the answers cost."""
        p = self._path(key)
        p.parent.mkdir(parents=True, exist_ok=True)
        entry = {"reply": cut_reply(reply)}
        if usage:
            entry["usage"] = {k: int(usage[k]) for k in ("input", "cached", "output") if k in usage}
        write_atomic(p, json.dumps(entry, ensure_ascii=False).encode("utf-8"))

    def usage(self, key: str) -> dict | None:
        """The provider's token counts stored with the answer of ``key``, or None (no answer, an
        answer stored without them, or an entry that cannot be read)."""
        try:
            entry = json.loads(self._path(key).read_bytes().decode("utf-8"))
            usage = entry["usage"]
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
            return None
        if not isinstance(usage, dict):
            return None
        out = {k: usage.get(k, 0) for k in ("input", "cached", "output")}
        ok = all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in out.values())
        return out if ok else None
