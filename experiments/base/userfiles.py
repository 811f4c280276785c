"""Reading and writing the user's files the one safe way: regular files only, bounded, whole or not at all.

Every file the suite reads comes from a user's disk or another machine's tree, so any of them may be a FIFO (an
open() that waits forever for a writer), a folder, a symlink loop, /dev/zero (a read that never ends) or a file far
larger than its kind can be. `open_regular` opens without waiting (O_NONBLOCK), keeps only a regular file and refuses
one over its size cap; every failure is an InputError that names the file and says why in words, never a word of its
contents. `write_atomic` writes to a temporary name in the same folder, fsyncs and renames, so a full disk or a kill
leaves the old file or the new one, never half of one and no temporary file.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from experiments.base.errors import InputError

MIB = 2 ** 20
DATA_FILE_BYTES = 16 * MIB     # a YAML or JSON data file (recipes, seeds, prices, a model's config.json)

# control characters, the line and paragraph separators, surrogates (bytes that are no UTF-8), and the invisible
# format characters that reorder or hide text on a terminal (bidirectional overrides and isolates, zero-width marks)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ud800-\udfff]")


def shown(text: object) -> str:
    """TEXT with control characters escaped (\\n, \\x1b, ...): a file name holding a newline or an ANSI sequence
    prints as one plain line, one holding bytes that are no UTF-8 (surrogates) as \\udcff."""
    s = str(text)
    if not _CONTROL.search(s):
        return s
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), s)


def reason(exc: OSError) -> str:
    """An OSError's cause in words (its errno's, without the file name the caller says anyway)."""
    if exc.errno == errno.ELOOP:
        return "a symlink loop"
    return str(exc.strerror or exc.__class__.__name__)


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISDIR(mode):
        return "a folder, not a file"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe), not a regular file"
    if stat.S_ISCHR(mode):
        return "a character device (like /dev/zero), not a regular file"
    if stat.S_ISBLK(mode):
        return "a block device, not a regular file"
    if stat.S_ISSOCK(mode):
        return "a socket, not a regular file"
    return "not a regular file"


def size_text(n: int) -> str:
    return f"{n / MIB:.0f} MiB" if n >= MIB else f"{n} bytes"


def open_regular(path: str | Path, limit: int | None = DATA_FILE_BYTES) -> IO[bytes]:
    """PATH opened for reading in binary, if it is a regular file of at most LIMIT bytes; else InputError naming it.
    A symlink is followed (a user's layout); a FIFO is opened without waiting for a writer and refused."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise InputError(path, f"cannot be read ({reason(exc)})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(path, kind_of(st.st_mode))
        if limit is not None and st.st_size > limit:
            raise InputError(path, f"{size_text(st.st_size)}, more than the {size_text(limit)} a file of this kind "
                                   "can plausibly hold")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | Path, limit: int | None = DATA_FILE_BYTES) -> bytes:
    """The bytes of regular file PATH (open_regular); a file that grew past LIMIT while read is refused too."""
    with open_regular(path, limit) as f:
        try:
            data = f.read() if limit is None else f.read(limit + 1)
        except OSError as exc:
            raise InputError(path, f"cannot be read ({reason(exc)})") from None
    if limit is not None and len(data) > limit:
        raise InputError(path, f"more than the {size_text(limit)} a file of this kind can plausibly hold")
    return data


def read_text(path: str | Path, limit: int | None = DATA_FILE_BYTES) -> str:
    """The UTF-8 text of PATH (a BOM dropped); InputError when it is no UTF-8."""
    try:
        return read_bytes(path, limit).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def read_json(path: str | Path, limit: int | None = DATA_FILE_BYTES) -> Any:
    """The JSON value in PATH; InputError (file, line) when it is not JSON, nests too deeply or holds a number no
    float can be."""
    text = read_text(path, limit)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"not valid JSON: {exc.msg}", exc.lineno) from None
    except RecursionError:
        raise InputError(path, "JSON nested too deeply") from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise InputError(path, f"not valid JSON: {str(exc).split(':')[0]}") from None


def lines(path: str | Path, limit: int | None) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, raw line) of PATH, read a line at a time from a regular file of at most LIMIT bytes."""
    with open_regular(path, limit) as f:
        n = 0
        try:
            for raw in f:
                n += 1
                yield n, raw
        except OSError as exc:
            raise InputError(path, f"cannot be read ({reason(exc)})", n or None) from None


def present(path: str | Path) -> bool:
    """Whether anything is at PATH (a dangling or looping symlink counts): a reader that finds something that is not
    a regular file says so instead of reading it as absent."""
    return os.path.lexists(path)


# ------------------------------------------------------------------------------------------------ writing


def write_atomic(path: str | Path, data: str | bytes, mode: int | None = None) -> None:
    """Write DATA to PATH whole or not at all: a temporary name in the same folder, fsync, rename. MODE: the new
    file's permission bits (default: the old file's, else 0o644 less the umask). A failure (a full disk, a read-only
    folder) removes the temporary file and raises InputError naming PATH."""
    path = Path(path)
    blob = data.encode("utf-8") if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    if mode is None:
        with contextlib.suppress(OSError):
            mode = stat.S_IMODE(os.stat(path).st_mode)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644 if mode is None else 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
                f.flush()
                os.fsync(f.fileno())
            if mode is not None:
                os.chmod(tmp, mode)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as exc:
        raise InputError(path, f"cannot be written ({reason(exc)})") from None
    with contextlib.suppress(OSError):  # the rename itself survives a power cut once the folder is synced
        dfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
