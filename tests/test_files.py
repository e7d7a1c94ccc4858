import errno
import os

import pytest

from marl_edu.base.files import atomic_write, atomic_write_bytes, atomic_write_text


def _names(folder):
    return sorted(p.name for p in folder.iterdir())


def test_content_is_exact_and_only_the_target_stays(tmp_path):
    data = bytes(range(256)) * 3  # every byte value, NUL and newline bytes included
    path = atomic_write_bytes(tmp_path / "data.bin", data)
    assert path == tmp_path / "data.bin" and path.read_bytes() == data
    atomic_write_text(tmp_path / "note.txt", "héllo\nwörld\n")
    assert (tmp_path / "note.txt").read_bytes() == "héllo\nwörld\n".encode("utf-8")  # UTF-8, newlines as given
    assert _names(tmp_path) == ["data.bin", "note.txt"]


def test_a_new_write_replaces_the_old_content(tmp_path):
    atomic_write_bytes(tmp_path / "f", b"old, and longer than the new content")
    atomic_write_bytes(tmp_path / "f", b"new")
    assert (tmp_path / "f").read_bytes() == b"new" and _names(tmp_path) == ["f"]


def test_the_temporary_is_a_hidden_unique_name_in_the_same_folder(tmp_path):
    seen = []

    def write(file):
        seen.append([name for name in _names(tmp_path) if name != "policy.pt"])
        file.write(b"x")

    atomic_write(tmp_path / "policy.pt", write)
    [[temporary]] = seen
    assert temporary.startswith(".policy.pt.") and temporary.endswith(".tmp") and temporary != ".policy.pt.tmp"


def test_two_writes_to_one_path_never_share_a_temporary(tmp_path):
    """A second write starts while the first is half done (two processes saving to one path): each has its own
    temporary, so neither truncates the other's, and the last rename wins with a complete file."""
    target = tmp_path / "run.pt"
    during = []

    def outer(file):
        file.write(b"outer, first half; ")
        atomic_write(target, lambda inner: inner.write(b"inner, complete"))  # finishes in the middle of outer
        during.append(target.read_bytes())
        file.write(b"outer, second half")

    atomic_write(target, outer)
    assert during == [b"inner, complete"]
    assert target.read_bytes() == b"outer, first half; outer, second half"
    assert _names(tmp_path) == ["run.pt"]


def test_a_failure_midway_leaves_the_target_untouched_and_no_temporary(tmp_path):
    target = tmp_path / "policy.pt"
    target.write_bytes(b"the previous good file")

    def write(file):
        file.write(b"half of the new one")
        raise ValueError("the caller's own error")

    with pytest.raises(ValueError, match="the caller's own error"):  # not turned into an OSError
        atomic_write(target, write)
    assert target.read_bytes() == b"the previous good file" and _names(tmp_path) == ["policy.pt"]


def test_ctrl_c_midway_leaves_no_temporary(tmp_path):
    def write(file):
        file.write(b"partial")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(tmp_path / "x.gif", write)
    assert _names(tmp_path) == []


def test_a_full_disk_is_one_clear_oserror_naming_the_path(tmp_path):
    target = tmp_path / "policy.pt"
    target.write_bytes(b"old")

    def write(file):
        file.write(b"partial")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(OSError) as caught:
        atomic_write(target, write)
    assert str(caught.value) == f"could not write {target}: {os.strerror(errno.ENOSPC)}"
    assert caught.value.errno == errno.ENOSPC  # still tells a program what went wrong
    assert target.read_bytes() == b"old" and _names(tmp_path) == ["policy.pt"]


def test_torch_write_failure_becomes_an_oserror(tmp_path):
    """torch.save onto a full disk raises RuntimeError('[enforce fail at inline_container.cc...'): the caller
    gets an OSError naming the file instead."""
    def write(file):
        file.write(b"partial")
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 704 vs 598")

    with pytest.raises(OSError, match=r"^could not write .*policy\.pt: torch's writer failed "
                                      r"\(\[enforce fail at inline_container\.cc:672\]"):
        atomic_write(tmp_path / "policy.pt", write)
    assert _names(tmp_path) == []


def test_other_runtime_errors_are_not_disguised_as_oserrors(tmp_path):
    def write(file):
        raise RuntimeError("a bug in the caller")

    with pytest.raises(RuntimeError, match="a bug in the caller"):
        atomic_write(tmp_path / "f", write)
    assert _names(tmp_path) == []


def test_a_refused_rename_leaves_the_target_and_no_temporary(tmp_path, monkeypatch):
    """The rename is the last step that can fail (a read-only folder, a target another program holds open)."""
    target = tmp_path / "run.pt"
    target.write_bytes(b"old")

    def refuse(source, destination):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(PermissionError, match=f"^could not write {target}: {os.strerror(errno.EACCES)}$"):
        atomic_write_bytes(target, b"new")
    monkeypatch.undo()
    assert target.read_bytes() == b"old" and _names(tmp_path) == ["run.pt"]


def test_a_read_only_folder_is_one_clear_oserror(tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("this user writes into read-only folders (root): test_a_refused_rename_... simulates it")
        with pytest.raises(OSError, match=f"^could not write {folder / 'x.txt'}: "):
            atomic_write_text(folder / "x.txt", "text")
        assert _names(folder) == []
    finally:
        folder.chmod(0o755)


def test_the_file_is_flushed_and_synced_before_the_rename(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(os, "replace", lambda a, b: (events.append("replace"), real_replace(a, b))[1])
    atomic_write_bytes(tmp_path / "f", b"data")
    assert events[:2] == ["fsync", "replace"]  # (then the folder's fsync, where the OS allows it)


def test_a_new_file_gets_the_usual_permissions_and_a_replaced_one_keeps_its_own(tmp_path):
    mask = os.umask(0o022)
    try:
        atomic_write_bytes(tmp_path / "new", b"x")
        assert (tmp_path / "new").stat().st_mode & 0o777 == 0o644  # not mkstemp's private 0o600
        (tmp_path / "mine").write_bytes(b"x")
        (tmp_path / "mine").chmod(0o640)
        atomic_write_bytes(tmp_path / "mine", b"y")
        assert (tmp_path / "mine").stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(mask)
