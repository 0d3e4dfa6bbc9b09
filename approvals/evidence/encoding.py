"""The bytes of a pack: canonical JSON and a canonical ZIP, so one set of contents makes one
file, and a byte changed anywhere in it (inside a member or between them) shows.

Pure Python, no Django: the offline verifier reads packs with it.
"""

import hashlib
import io
import json
import zipfile
from dataclasses import asdict, is_dataclass
from datetime import UTC, date, datetime
from decimal import Decimal

# Every member carries the same time and attributes and is stored, not compressed: deflate's
# output depends on the zlib at hand, and the verifier rebuilds the file byte for byte.
MEMBER_TIME = (1980, 1, 1, 0, 0, 0)
MADE_ON_UNIX = 3
FILE_MODE = 0o644 << 16


def sha256(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def json_bytes(value) -> bytes:
    """``value`` as the pack writes JSON: sorted keys, indented, UTF-8, datetimes in UTC ISO
    form."""
    text = json.dumps(
        value, default=_plain, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False
    )
    return (text + "\n").encode()


def _plain(value):
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat() if value.tzinfo else value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, Decimal):
        return str(value)
    return str(value)  # a lazy translation, a UUID: as text


def zip_bytes(members: list[tuple[str, bytes]]) -> bytes:
    """The members, in this order, as one ZIP file."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, content in members:
            info = zipfile.ZipInfo(name, date_time=MEMBER_TIME)
            info.create_system, info.external_attr = MADE_ON_UNIX, FILE_MODE
            archive.writestr(info, content)
    return buffer.getvalue()


def zip_members(content: bytes) -> list[tuple[str, bytes]]:
    """Each member's name and bytes, in the file's order. Raises (zipfile.BadZipFile, ...) on a
    file that is not a readable ZIP or a member whose CRC does not match."""
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        return [(info.filename, archive.read(info)) for info in archive.infolist()]
