"""gausskl-dask's outputs are put in place in one step (gausskl.dask._files.replace): at every
moment the path holds the old output or the new one whole, never neither, never a mix. Checked by
a thread that looks at the path all the while outputs replace each other (a Zarr store over a
store, a file over a file, a store over a file and back), and that each one lands whole."""

import os
import threading

import pytest

from gausskl.dask import _files


def store(path, tag):
    """A directory store whose two files both name tag (a mix of two would show)."""
    os.mkdir(path)
    for name in ("a", "b"):
        with open(os.path.join(path, name), "w") as f:
            f.write(tag)


def read(path):
    """The tag of what is at path: a file's text, or a store's when both its files agree."""
    fd = os.open(path, os.O_RDONLY)  # one of them, held while read (as a reader opens it)
    try:
        if not os.path.isdir(f"/proc/self/fd/{fd}"):
            return os.read(fd, 100).decode()
        tags = set()
        for name in ("a", "b"):
            member = os.open(name, os.O_RDONLY, dir_fd=fd)
            tags.add(os.read(member, 100).decode())
            os.close(member)
        assert len(tags) == 1, f"a mix of two stores: {tags}"
        return tags.pop()
    finally:
        os.close(fd)


def watch(path, stop, seen, problems):
    while not stop.is_set():
        try:
            seen.add(read(path))
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            # A name that was a store a moment ago may be a file now (and back): read again;
            # the path itself must exist.
            if not os.path.lexists(path):
                problems.append("nothing at the path")
        except AssertionError as e:
            problems.append(str(e))


@pytest.mark.parametrize("kinds", [("store", "store"), ("file", "file"), ("store", "file")])
def test_replace_never_leaves_the_path_empty(tmp_path, kinds):
    out = str(tmp_path / "kl.zarr")
    store(out, "0") if kinds[0] == "store" else open(out, "w").write("0")
    stop, seen, problems = threading.Event(), set(), []
    watcher = threading.Thread(target=watch, args=(out, stop, seen, problems))
    watcher.start()
    try:
        for i in range(1, 100):
            temporary = _files.temporary_beside(out)
            if kinds[i % 2] == "store":
                store(temporary, str(i))
            else:
                with open(temporary, "w") as f:
                    f.write(str(i))
            _files.replace(temporary, out)
            assert read(out) == str(i)
    finally:
        stop.set()
        watcher.join()
    assert problems == []
    assert sorted(os.listdir(tmp_path)) == ["kl.zarr"]  # no temporary or old output left
    assert len(seen) > 1


def test_replace_without_an_exchange_keeps_the_old_output_beside(tmp_path, monkeypatch):
    """Where the file system cannot exchange (two renames), the old store stays whole under
    the temporary name + ".old" until the new one is in place."""
    monkeypatch.setattr(_files, "_exchange", lambda a, b: False)
    out = str(tmp_path / "kl.zarr")
    store(out, "old")
    temporary = _files.temporary_beside(out)
    store(temporary, "new")
    renames = []
    real = os.rename

    def rename(a, b):
        renames.append((os.path.basename(a), os.path.basename(b)))
        real(a, b)

    monkeypatch.setattr(os, "rename", rename)
    _files.replace(temporary, out)
    assert read(out) == "new" and sorted(os.listdir(tmp_path)) == ["kl.zarr"]
    name = os.path.basename(temporary)
    assert renames == [("kl.zarr", name + ".old"), (name, "kl.zarr")]


def test_a_store_over_a_store_is_one_step(tmp_path, monkeypatch):
    """The exchange is a single system call: with rename and replace refused, a store still
    replaces a store, and an interruption after it (in the removal of the old one) leaves the
    new store whole at the path (the old one under the temporary name)."""
    out = str(tmp_path / "kl.zarr")
    store(out, "old")
    temporary = _files.temporary_beside(out)
    store(temporary, "new")

    def refused(*args):
        raise AssertionError("two steps")

    def interrupted(path):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "rename", refused)
    monkeypatch.setattr(os, "replace", refused)
    monkeypatch.setattr(_files, "_remove", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _files.replace(temporary, out)
    assert read(out) == "new" and read(temporary) == "old"
