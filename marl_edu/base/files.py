"""Writing files so that nothing is lost: a file is either the complete old one or the complete new one.

``atomic_write(path, write)`` lets ``write`` fill a temporary file with a unique name beside ``path``, flushes it
to the disk (``os.fsync``) and only then renames it over ``path`` (``os.replace``, atomic on one file system), so a
crash, a full disk or Ctrl-C in the middle never leaves a half-written file under the real name, and two programs
writing the same path never write into each other's temporary. On any failure the temporary is removed and
``path`` keeps what it held. A failure to write (disk full, permission denied, read-only folder, torch's writer
giving up) comes back as one ``OSError`` line naming the file and the cause::

    OSError: could not write results/x/policy.pt: No space left on device
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import stat
import tempfile
from typing import BinaryIO, Callable

# what torch.save's zip writer says when a write fails under it (a full disk gives
# "[enforce fail at inline_container.cc:672] . unexpected pos 704 vs 598")
_TORCH_WRITE_ERRORS = ("inline_container", "PytorchStreamWriter")


def atomic_write(path: str | pathlib.Path, write: Callable[[BinaryIO], object]) -> pathlib.Path:
    """Write a file through a unique temporary name, flushed, synced and renamed over ``path``.

    Args:
        path: the file to write; its folder must exist. An existing file is replaced (keeping its permissions), and
            stays as it was if anything fails.
        write: called once with a binary file object open for writing (``torch.save(obj, file)``,
            ``image.save(file, format="GIF")``, ``figure.savefig(file, format="png")``); it must not close it.
    Returns ``path`` as a ``pathlib.Path``.
    Raises OSError ``could not write <path>: <cause>`` (the original error chained, its ``errno`` kept) when the
    file cannot be written; anything else ``write`` raises (a ValueError, Ctrl-C) comes through unchanged. Either
    way the temporary file is gone and ``path`` untouched.
    """
    path = pathlib.Path(path)
    try:
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:  # a missing or read-only folder
        raise _write_error(path, error) from error
    try:
        with contextlib.suppress(OSError):  # (a file system without permissions keeps its own)
            os.chmod(temporary, _mode_for(path))  # mkstemp's 0o600 would make every written file private
        with os.fdopen(fd, "wb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if _is_write_error(error):
            raise _write_error(path, error) from error
        raise
    _sync_folder(path.parent)
    return path


def atomic_write_bytes(path: str | pathlib.Path, data: bytes) -> pathlib.Path:
    """``atomic_write`` of ``data`` (bytes) to ``path``; returns ``path``."""
    return atomic_write(path, lambda file: file.write(data))


def atomic_write_text(path: str | pathlib.Path, text: str) -> pathlib.Path:
    """``atomic_write`` of ``text`` (a str, written as UTF-8 with its newlines as given) to ``path``; returns
    ``path``."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def _mode_for(path: pathlib.Path) -> int:
    """The permissions ``path`` should have: those of the file it replaces, else what a plain ``open`` would give
    (0o666 less the process's umask)."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        umask = os.umask(0)  # reading the umask means setting it: put it straight back
        os.umask(umask)
        return 0o666 & ~umask


def _is_write_error(error: BaseException) -> bool:
    """An OSError, or torch's zip writer failing (it raises RuntimeError when the file under it does)."""
    if isinstance(error, OSError):
        return True
    return isinstance(error, RuntimeError) and any(mark in str(error) for mark in _TORCH_WRITE_ERRORS)


def _write_error(path: pathlib.Path, error: BaseException) -> OSError:
    """One line, ``could not write <path>: <cause>``, of the same OSError subclass with the same errno."""
    if isinstance(error, OSError):
        message = f"could not write {path}: {error.strerror or error}"
        try:
            clear = type(error)(message)  # PermissionError stays a PermissionError
        except TypeError:
            clear = OSError(message)
        clear.errno = error.errno
        return clear
    first_line = str(error).strip().splitlines()[0]
    return OSError(f"could not write {path}: torch's writer failed ({first_line}), most likely a full disk")


def _sync_folder(folder: pathlib.Path) -> None:
    """Flush the folder's entry for the renamed file to the disk, where the OS allows it (not on Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
