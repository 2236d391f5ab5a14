"""Opening files safely: regular files only, bounded size, and (for a shared server) data roots.

Every log, rollouts table or sidecar file tpsviz reads goes through :func:`read_file`:

- the file is opened without blocking (a FIFO or a device never hangs the caller) and checked
  to be a *regular* file with ``fstat`` on the open descriptor before a byte is read, so
  ``/dev/zero``, FIFOs, sockets and folders are refused;
- at most ``max_bytes`` are read (``/proc`` files report size 0, so the size is also checked
  while reading);
- messages never echo what a file holds.

A dashboard served to a team reads server paths only under the folders listed in
``TPSVIZ_DATA_ROOTS`` (:class:`DataRoots`); outside them, and for anything that is not a
readable regular file, the message is one and the same (no existence oracle).
See ``docs/deployment.md``.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Limits", "DataRoots", "PathRefused", "read_file", "limits_from_env", "CANNOT_OPEN"]

MB = 1024 * 1024
DEFAULT_MAX_FILE_MB = 1024
DEFAULT_MAX_ROWS = 5_000_000
DEFAULT_MAX_CELLS = 100_000_000
DEFAULT_MAX_JSON_NODES = 10_000_000
CANNOT_OPEN = ("cannot open this path: it is not a readable log file under the data roots of "
               "this server")


class PathRefused(PermissionError):
    """A server path the dashboard will not open (outside the data roots, missing, not a file).

    The message is identical for every reason, so it tells nothing about the server's files.
    """

    def __init__(self, label: str = "path"):
        self.label = label
        super().__init__(CANNOT_OPEN)


@dataclass(frozen=True)
class Limits:
    """Size limits applied before and after parsing a file.

    Attributes
    ----------
    max_bytes : int
        Largest file read, in bytes (``TPSVIZ_MAX_FILE_MB``, default 1024 MB).
    max_rows : int
        Largest number of data rows parsed (``TPSVIZ_MAX_ROWS``, default 5,000,000).
    max_cells : int
        Largest number of table cells (rows × columns) parsed (``TPSVIZ_MAX_CELLS``, default
        100,000,000): a narrow log may use the whole row cap, a very wide one may not.
    max_json_nodes : int
        Largest number of JSON values (objects, lists and their items) in a harness log parsed as
        one document (``TPSVIZ_MAX_JSON_NODES``, default 10,000,000; real logs hold one value per
        ~40 bytes, so about 400 MB of JSON).
    """

    max_bytes: int = DEFAULT_MAX_FILE_MB * MB
    max_rows: int = DEFAULT_MAX_ROWS
    max_cells: int = DEFAULT_MAX_CELLS
    max_json_nodes: int = DEFAULT_MAX_JSON_NODES


def _env_int(name: str, default: int, scale: int = 1) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default * scale
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"environment variable {name} must be a number, got {raw!r}") from None
    if not value > 0:
        raise ValueError(f"environment variable {name} must be positive, got {raw!r}")
    return int(value * scale)


def limits_from_env() -> Limits:
    """The :class:`Limits` set by ``TPSVIZ_MAX_FILE_MB``, ``TPSVIZ_MAX_ROWS``,
    ``TPSVIZ_MAX_CELLS`` and ``TPSVIZ_MAX_JSON_NODES``."""
    return Limits(max_bytes=_env_int("TPSVIZ_MAX_FILE_MB", DEFAULT_MAX_FILE_MB, MB),
                  max_rows=_env_int("TPSVIZ_MAX_ROWS", DEFAULT_MAX_ROWS),
                  max_cells=_env_int("TPSVIZ_MAX_CELLS", DEFAULT_MAX_CELLS),
                  max_json_nodes=_env_int("TPSVIZ_MAX_JSON_NODES", DEFAULT_MAX_JSON_NODES))


def size_text(n: float) -> str:
    """A byte count for people: ``"1.5 GB"``."""
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


class FileRefused(OSError):
    """A path that is not a readable regular file, or too large (message names no content)."""


def read_file(path, max_bytes: int | None = None, label: str | None = None) -> bytes:
    """The bytes of a regular file, read without blocking and never past ``max_bytes``.

    Parameters
    ----------
    path : str or PathLike
        The file.
    max_bytes : int, optional
        Largest size read (default: :func:`limits_from_env`).
    label : str, optional
        How to name the file in messages (default: its name).

    Returns
    -------
    bytes

    Raises
    ------
    FileRefused
        When the path does not exist, is a folder, a FIFO, a device or a socket, cannot be
        read, or is larger than ``max_bytes``. Messages say which, never what it holds.
    """
    limit = limits_from_env().max_bytes if max_bytes is None else int(max_bytes)
    name = label or Path(path).name or str(path)
    try:
        fd = os.open(os.fspath(path), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise FileRefused(f"{name}: no such file") from None
    except IsADirectoryError:
        raise FileRefused(f"{name}: is a folder, not a file") from None
    except PermissionError:
        raise FileRefused(f"{name}: permission denied") from None
    except OSError as exc:
        raise FileRefused(f"{name}: cannot be opened ({errno.errorcode.get(exc.errno, 'error')})"
                          ) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise FileRefused(f"{name}: is a folder, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused(f"{name}: is not a regular file (a device, FIFO or socket); "
                              "give the path of a file")
        if info.st_size > limit:
            raise FileRefused(f"{name}: the file is {size_text(info.st_size)}, more than the "
                              f"{size_text(limit)} this installation reads (TPSVIZ_MAX_FILE_MB)")
        os.set_blocking(fd, True)
        chunks = []
        total = 0
        # one read of the whole file when its size is known (no second copy when joining);
        # /proc files report size 0 and are read in pieces, still never past the limit
        want = info.st_size + 1 if info.st_size else 1 << 16
        while True:
            chunk = os.read(fd, max(1, min(want, limit + 1 - total)))
            want = 1 << 24
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise FileRefused(f"{name}: the file is larger than the {size_text(limit)} this "
                                  "installation reads (TPSVIZ_MAX_FILE_MB)")
        return b"".join(chunks)
    except OSError as exc:
        if isinstance(exc, FileRefused):
            raise
        raise FileRefused(f"{name}: cannot be read ({errno.errorcode.get(exc.errno, 'error')})"
                          ) from None
    finally:
        os.close(fd)


#: a root's name given by the administrator (``TPSVIZ_DATA_ROOTS=logs=/srv/agent-logs``)
_ROOT_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]{0,39})=(.+)$")
#: a path named by its root (``logs:/runs/a.json``, ``logs:`` for the root itself)
_NAMED_PATH = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]{0,39}):(/.*)?$", re.DOTALL)


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


class DataRoots:
    """The folders a shared dashboard may read server paths from (``TPSVIZ_DATA_ROOTS``).

    Parameters
    ----------
    roots : list of str or PathLike
        Folders, each a path or ``name=path``; each is resolved to its real path once. Entries
        that are not folders are ignored (and listed in ``ignored``).
    show_paths : bool
        Show visitors the roots' full paths (``TPSVIZ_SHOW_ROOT_PATHS=1``); by default a root is
        shown by its name (:meth:`show`, :meth:`hide`), so a page never tells the server's
        folder layout.

    Attributes
    ----------
    roots : list of pathlib.Path
        The roots' real paths.
    names : list of str
        Their short names, one per root: the name given (``name=path``), else the folder's own
        name; a name already taken gets ``-2``, ``-3``, …

    Notes
    -----
    A path is accepted when its real path (symbolic links resolved) is a regular file inside
    one of the roots. Everything else raises :class:`PathRefused` with one identical message.
    A path may be given by its root's name, as pages show it: ``logs:/runs/a.json``.
    """

    def __init__(self, roots, show_paths: bool = False):
        self.roots: list[Path] = []
        self.names: list[str] = []
        self.ignored: list[str] = []
        self.show_paths = bool(show_paths)
        self._given: list[tuple[str, str]] = []  # (a root as written, its name): hidden too
        for r in roots:
            r = str(r).strip()
            if not r:
                continue
            named = _ROOT_NAME.match(r)
            name, path = (named.group(1), named.group(2).strip()) if named else (None, r)
            p = Path(path).expanduser()
            if p.is_absolute() and p.is_dir():
                real = Path(os.path.realpath(p))
                name = name or real.name or "root"
                base, k = name, 2
                while name in self.names:
                    name, k = f"{base}-{k}", k + 1
                self.roots.append(real)
                self.names.append(name)
                self._given.append((os.path.normpath(str(p)), name))
            else:
                self.ignored.append(r)

    @classmethod
    def from_env(cls) -> "DataRoots":
        """Roots from ``TPSVIZ_DATA_ROOTS`` (separated by ``os.pathsep``, ``:`` on Linux; each a
        path or ``name=path``), shown by their full paths only with ``TPSVIZ_SHOW_ROOT_PATHS=1``."""
        return cls(os.environ.get("TPSVIZ_DATA_ROOTS", "").split(os.pathsep),
                   show_paths=_flag("TPSVIZ_SHOW_ROOT_PATHS"))

    def expand(self, path: str) -> str:
        """A path given by its root's name (``logs:/runs/a.json``) as the path on the server; any
        other text as it is."""
        m = _NAMED_PATH.match(str(path).strip())
        if not (m and m.group(1) in self.names):
            return str(path)
        root = self.roots[self.names.index(m.group(1))]
        rest = (m.group(2) or "").lstrip("/")
        return str(root / rest) if rest else str(root)

    def show(self, path) -> str:
        """How a server path is named to a visitor: by its root's name, ``logs:/runs/a.json``
        (``logs:/`` for the root itself); a path under no root by its file name; the full
        path when the administrator opted in (``show_paths``)."""
        if self.show_paths:
            return str(path)
        real = Path(os.path.realpath(self.expand(str(path))))
        for root, name in zip(self.roots, self.names):
            if real == root:
                return f"{name}:/"
            if root in real.parents:
                return f"{name}:/{real.relative_to(root).as_posix()}"
        return Path(str(path)).name

    def hide(self, text: str) -> str:
        """``text`` with every root's path written by its name (``/srv/agent-logs/runs/a.json``
        → ``logs:/runs/a.json``), for a message shown to a visitor; unchanged with
        ``show_paths``. A root's path counts only as a whole path (not ``/srv/logs`` inside
        ``/srv/logs2`` or ``/x/srv/logs``)."""
        if self.show_paths or not text:
            return text
        named: dict[str, str] = {}
        for path, name in [*zip(map(str, self.roots), self.names), *self._given]:
            named.setdefault(path, name)  # a folder listed twice goes by its first name, as in show()
        paths = sorted((p for p in named if len(p) > 1), key=len, reverse=True)  # ("/" is every path)
        if not paths:
            return text
        # one pass, the longest path first: a name written in is never read again as a path
        pattern = re.compile(r"(?<![\w./\\-])(" + "|".join(map(re.escape, paths)) + r")(?![\w.-])")

        def by_name(m) -> str:
            return named[m.group(1)] + (":" if m.string.startswith("/", m.end()) else ":/")

        return pattern.sub(by_name, text)

    @property
    def enabled(self) -> bool:
        """True when at least one root is configured (server paths are off otherwise)."""
        return bool(self.roots)

    def resolve(self, path: str, label: str = "path", allow_dir: bool = False) -> Path:
        """The real path of ``path`` if it is a regular file (or, with ``allow_dir``, a folder)
        under a root.

        A relative path is taken relative to the first root.

        Raises
        ------
        PathRefused
            Identically for a path outside the roots, a missing file, a folder, a device, …
        """
        text = self.expand(str(path).strip())
        if not self.roots or not text or "\x00" in text:
            raise PathRefused(label)
        p = Path(text).expanduser()
        if not p.is_absolute():
            p = self.roots[0] / p
        real = Path(os.path.realpath(p))
        if not any(real == r or r in real.parents for r in self.roots):
            raise PathRefused(label)
        try:
            mode = os.stat(real).st_mode
        except OSError:
            raise PathRefused(label) from None
        # (a root itself is a folder like any other: a team's dataset directory is often the root)
        if not (stat.S_ISREG(mode) or (allow_dir and stat.S_ISDIR(mode))):
            raise PathRefused(label)
        return real

    def contains(self, path: str, allow_dir: bool = False) -> bool:
        """True when :meth:`resolve` accepts ``path``."""
        try:
            self.resolve(path, allow_dir=allow_dir)
        except PathRefused:
            return False
        return True

    def read(self, path: str, max_bytes: int | None = None, label: str = "path") -> bytes:
        """:func:`read_file` of a path under a root; every failure is :class:`PathRefused`
        except a size above the limit, which names the limit (not the content)."""
        real = self.resolve(path, label)
        try:
            return read_file(real, max_bytes=max_bytes, label=label or Path(str(path)).name)
        except FileRefused as exc:
            if "larger than" in str(exc) or "more than the" in str(exc):
                raise
            raise PathRefused(label) from None
