"""Members of an Inspect AI ``.eval`` file (a zip), read safely.

Since inspect_ai 0.3.206 the members are zstd-compressed (zip method 93), which Python's own
``zipfile`` cannot decompress before 3.14; older logs use deflate. The central directory is
read with ``zipfile``; a zstd member's bytes are located through its local header and
decompressed with the ``zstandard`` package (imported only here, on first use). Every member
is checked against its CRC, and the total decompressed size is bounded (a zip bomb stops at the
limit instead of filling memory). A member listed twice makes the archive malformed: zip readers
differ on which copy they take, so no copy is chosen.
"""

from __future__ import annotations

import io
import json
import struct
import zipfile
import zlib

from tpsviz.core.errors import LogFormatError
from tpsviz.core.schema import no_lone_surrogates, show_id

__all__ = ["EvalZip"]

ZSTD = 93


#: members an archive may list (an Inspect log holds a few per sample: 200,000 is far beyond any
#: real evaluation, and bounds the ~800 bytes zipfile keeps per member)
MAX_MEMBERS = 200_000


def _member_count(raw: bytes) -> int:
    """The number of members the zip's end-of-central-directory record announces (0 if not found;
    zipfile then reports the damage)."""
    at = raw.rfind(b"PK\x05\x06", max(0, len(raw) - 65_557))
    if at < 0 or at + 22 > len(raw):
        return 0
    count = struct.unpack_from("<H", raw, at + 10)[0]
    if count == 0xFFFF:  # zip64: the count is in the zip64 end record, found through its locator
        loc = raw.rfind(b"PK\x06\x07", max(0, at - 20), at)
        if loc >= 0:
            end64 = struct.unpack_from("<Q", raw, loc + 8)[0]
            if raw[end64:end64 + 4] == b"PK\x06\x06" and end64 + 40 <= len(raw):
                count = struct.unpack_from("<Q", raw, end64 + 32)[0]
    return int(count)


class EvalZip:
    """Read JSON members of a ``.eval`` zip held in memory.

    Parameters
    ----------
    raw : bytes
        The file's bytes.
    name : str
        File name for messages.
    max_bytes : int
        Largest total of decompressed member bytes read.
    """

    def __init__(self, raw: bytes, name: str, max_bytes: int, max_nodes: int = 10_000_000):
        self.name = name
        self.budget = int(max_bytes)
        self.limit = int(max_bytes)
        self.nodes = int(max_nodes)
        self.raw = raw
        count = _member_count(raw)
        if count > MAX_MEMBERS:  # checked before zipfile builds an entry object per member
            raise LogFormatError(name, [f"the .eval archive lists {count:,} members, more than the "
                                        f"{MAX_MEMBERS:,} an Inspect log of any size needs"])
        try:
            self.zip = zipfile.ZipFile(io.BytesIO(raw))
            listed = self.zip.infolist()
        except (zipfile.BadZipFile, OSError, ValueError):
            raise LogFormatError(name, ["the file is not a readable zip archive (a damaged .eval log?)"]) from None
        self.infos = {}
        twice = {}
        for info in listed:
            if info.filename in self.infos:
                twice[info.filename] = True
            self.infos[info.filename] = info
        if twice:
            # Inspect never writes a member twice; zip readers disagree on which copy counts
            # (zipfile takes the last, others the first), so the file is malformed, not read
            raise LogFormatError(name, [f"member {show_id(member, 60)} appears twice in the .eval archive "
                                        "(Inspect AI writes each member once: the file was altered or damaged)"
                                        for member in twice])

    @property
    def names(self) -> list[str]:
        return list(self.infos)

    def has(self, member: str) -> bool:
        return member in self.infos

    def read(self, member: str) -> bytes:
        """The decompressed bytes of a member (CRC-checked, within the size budget)."""
        info = self.infos.get(member)
        if info is None:
            raise LogFormatError(self.name, [f"member {show_id(member, 60)} is missing from the .eval archive"])
        if info.file_size > self.budget:
            raise LogFormatError(self.name, [f"the .eval archive expands beyond the {self.limit / 2**20:,.0f} MB "
                                             "this installation reads (TPSVIZ_MAX_FILE_MB)"])
        try:
            if info.compress_type in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                data = self.zip.read(member)
            elif info.compress_type == ZSTD:
                data = self._zstd(info)
            else:
                raise LogFormatError(self.name, [f"member {show_id(member, 60)} uses zip compression method "
                                                 f"{info.compress_type}, which tpsviz cannot read"])
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError):
            raise LogFormatError(self.name, [f"member {show_id(member, 60)} is damaged"]) from None
        self.budget -= len(data)
        return data

    def _zstd(self, info: zipfile.ZipInfo) -> bytes:
        import zstandard  # (only for Inspect logs with zstd members)

        off = info.header_offset
        head = self.raw[off:off + 30]
        if head[:4] != b"PK\x03\x04":
            raise LogFormatError(self.name, [f"member {show_id(info.filename, 60)} has a damaged header"])
        n_name, n_extra = struct.unpack("<HH", head[26:30])
        start = off + 30 + n_name + n_extra
        packed = self.raw[start:start + info.compress_size]
        try:
            with zstandard.ZstdDecompressor().stream_reader(packed, read_across_frames=True) as r:
                data = r.read(info.file_size + 1)  # never more than the size the archive states
        except zstandard.ZstdError:
            raise LogFormatError(self.name, [f"member {show_id(info.filename, 60)} is damaged (zstd)"]) from None
        if len(data) != info.file_size or (zlib.crc32(data) & 0xFFFFFFFF) != info.CRC:
            raise LogFormatError(self.name, [f"member {show_id(info.filename, 60)} is damaged (size or CRC)"])
        return data

    def json(self, member: str):
        """A member parsed as JSON (its objects and lists count against the archive's budget)."""
        data = self.read(member)
        self.nodes -= data.count(b"{") + data.count(b"[") + data.count(b",")
        if self.nodes < 0:
            raise LogFormatError(self.name, ["the archive holds more JSON values than this installation "
                                             "parses (TPSVIZ_MAX_JSON_NODES)"])
        label = show_id(member, 60)
        try:
            return no_lone_surrogates(json.loads(data), data)
        except (UnicodeDecodeError, ValueError):  # JSONDecodeError, or a number too long to read
            raise LogFormatError(self.name, [f"member {label} is not valid JSON"]) from None
        except RecursionError:
            raise LogFormatError(self.name, [f"member {label} is nested too deeply"]) from None
