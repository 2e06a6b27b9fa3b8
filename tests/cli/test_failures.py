"""Interruption, disk trouble and hostile input sizes: the run ends with a clear error or by the
signal, no temporary or partial file is left, an existing output keeps its bytes, and input
that claims more data than it holds fails fast, before memory is allocated for the claim."""

import os
import re
import resource
import signal
import struct
import subprocess
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

from cli_helpers import gaussians, save

EXISTING = b"\x93NUMPY an earlier result, to be left alone\n"


class Folder:
    """An output folder holding an earlier result, and its exact content at the start."""

    def __init__(self, path, name="result.npy"):
        path.mkdir(exist_ok=True)
        self.target = path / name
        self.target.write_bytes(EXISTING)
        self.before = self.snapshot()

    def snapshot(self):
        return {f.name: f.read_bytes() for f in self.target.parent.iterdir()}

    def temporaries(self):
        return [f.name for f in self.target.parent.iterdir() if f.name.endswith(".tmp")]

    def assert_untouched(self):
        assert self.snapshot() == self.before, "the output folder changed"


def one_error_line(stderr):
    assert stderr.startswith("gausskl: error: ") and stderr.count("\n") == 1, (
        f"stderr is not one 'gausskl: error: ' line:\n{stderr}"
    )
    return stderr


# --- SIGINT and SIGTERM during a long run -------------------------------------------------


@pytest.mark.parametrize("command", ["pairwise", "knn"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_removes_the_temporary_file(gausskl, tmp_path, rng, command, sig):
    out = Folder(tmp_path / "out", "result.npy" if command == "pairwise" else "result.npz")
    k = ["-k", "5"] if command == "knn" else []
    # The signal must land while the output is being computed or written: wait for the
    # temporary file to appear. Should the run be over before that, retry with a larger one.
    for n in (4000, 8000, 16000):
        args = save(tmp_path, f"p{n}", gaussians(rng, "std", n, 64, np.float32))
        # The signal's default action restored in the child: a runner that starts the tests in
        # the background (SIGINT ignored, which gausskl keeps ignored) must not change the test.
        proc = subprocess.Popen([str(gausskl.path), command, "--p", *args, *k, "-o", out.target],
                                stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(sig, signal.SIG_DFL))
        deadline = time.monotonic() + 60
        while proc.poll() is None and not out.temporaries() and time.monotonic() < deadline:
            time.sleep(0.001)
        interrupted = proc.poll() is None
        if interrupted:
            assert out.temporaries(), "no temporary file appeared within 60 s"
            proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
        if interrupted:
            break
        assert proc.returncode == 0, stderr
        out.target.write_bytes(EXISTING)  # finished before the signal: undo and go larger
    else:
        pytest.fail("every run finished before it could be interrupted")
    assert proc.returncode == -sig, f"exit {proc.returncode}, stderr:\n{stderr}"
    assert out.temporaries() == []
    out.assert_untouched()


# --- full disk and unwritable folders ------------------------------------------------------


def mount_tmpfs(folder, size):
    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.decode().strip()}")


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 256 KiB file system of its own, unmounted afterwards."""
    folder = tmp_path / "small"
    mount_tmpfs(folder, "256k")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


def file_size_limit(sigxfsz):
    """For preexec_fn: files may grow to 256 KiB; SIGXFSZ as given (SIG_IGN: writes fail with
    EFBIG instead of the signal killing the process)."""

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, resource.RLIM_INFINITY))
        signal.signal(signal.SIGXFSZ, sigxfsz)

    return limit


def big_pairwise_input(tmp_path, rng):
    # 400 x 400 float64 results: 1.28 MB, well past the 256 KiB the tests allow.
    return save(tmp_path, "p", gaussians(rng, "std", 400, 8))


@pytest.mark.parametrize("output", ["result.npy", "result.csv"])
def test_full_disk(gausskl, tmp_path, rng, small_tmpfs, output):
    out = Folder(small_tmpfs, output)
    result = gausskl("pairwise", "--p", *big_pairwise_input(tmp_path, rng), "-o", out.target)
    assert result.returncode == 1, f"exit {result.returncode}, stderr:\n{result.stderr}"
    assert re.search(r"\[write\].*No space left on device", one_error_line(result.stderr))
    out.assert_untouched()


@pytest.mark.parametrize("output", ["result.npy", "result.csv"])
def test_file_size_limit(gausskl, tmp_path, rng, output):
    out = Folder(tmp_path / "out", output)
    args = ["pairwise", "--p", *big_pairwise_input(tmp_path, rng), "-o", out.target]
    result = subprocess.run([str(gausskl.path), *args], capture_output=True, text=True,
                            timeout=60, preexec_fn=file_size_limit(signal.SIG_IGN))
    assert result.returncode == 1, f"exit {result.returncode}, stderr:\n{result.stderr}"
    assert re.search(r"\[write\].*File too large", one_error_line(result.stderr))
    out.assert_untouched()


def test_file_size_limit_signal_still_removes_the_temporary_file(gausskl, tmp_path, rng):
    # With SIGXFSZ at its default action the kernel ends the process at the limit.
    out = Folder(tmp_path / "out")
    args = ["pairwise", "--p", *big_pairwise_input(tmp_path, rng), "-o", out.target]
    result = subprocess.run([str(gausskl.path), *args], capture_output=True, timeout=60,
                            preexec_fn=file_size_limit(signal.SIG_DFL))
    assert result.returncode == -signal.SIGXFSZ, f"exit {result.returncode}"
    out.assert_untouched()


@pytest.fixture
def unwritable_folder(tmp_path):
    """A folder with an earlier result that cannot be written: read-only permissions, or for
    root (whom permissions do not stop) a read-only tmpfs."""
    folder = tmp_path / "readonly"
    if os.geteuid() != 0:
        out = Folder(folder)
        folder.chmod(0o555)
        yield out
        folder.chmod(0o755)
        return
    mount_tmpfs(folder, "1m")
    out = Folder(folder)
    subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
    yield out
    subprocess.run(["umount", str(folder)], check=True)


@pytest.mark.parametrize("command", ["kl", "pairwise"])
def test_unwritable_folder(gausskl, tmp_path, rng, unwritable_folder, command):
    out = unwritable_folder
    result = gausskl(command, "--p", *save(tmp_path, "p", gaussians(rng, "std", 3, 4)),
                     "-o", out.target)
    assert result.returncode == 1, f"exit {result.returncode}, stderr:\n{result.stderr}"
    assert re.search(re.escape(str(out.target)) + r".*(Permission denied|Read-only file system)",
                     one_error_line(result.stderr))
    out.assert_untouched()


# --- input that claims more than it holds --------------------------------------------------

# An allocation for any claim below would show as a peak RSS of gigabytes; the CLI's own needs
# stay far under this (sanitizer builds included).
MAX_RSS = 400 << 20


def run_measured(gausskl, tmp_path, *args):
    """Runs gausskl; returns (exit status, stderr, peak RSS in bytes, seconds)."""
    err_path = tmp_path / "stderr.txt"
    start = time.monotonic()
    with open(err_path, "w") as err:
        proc = subprocess.Popen([str(gausskl.path), *map(str, args)], stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, err_path.read_text(), usage.ru_maxrss * 1024, time.monotonic() - start


def assert_fails_fast(gausskl, tmp_path, spec, *patterns):
    out = Folder(tmp_path / "out")
    code, stderr, rss, seconds = run_measured(gausskl, tmp_path, "kl", "--p", *spec, "-o",
                                              out.target)
    assert code == 2, f"exit {code}, stderr:\n{stderr}"
    for pattern in patterns:
        assert re.search(pattern, one_error_line(stderr)), f"no {pattern!r} in:\n{stderr}"
    assert rss < MAX_RSS, f"peak RSS {rss >> 20} MiB: memory was allocated for the claim"
    assert seconds < 10
    out.assert_untouched()


def npy_image(shape_text, data=b"", descr="<f8"):
    """A version 1.0 .npy image with the given header shape text and raw data."""
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_text}, }}"
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data


def write_npy_spec(tmp_path, image, std_rows=2):
    """mean=<image> std=<a valid [std_rows, 4] array>, as NAME=FILE items."""
    (tmp_path / "mean.npy").write_bytes(image)
    np.save(tmp_path / "std.npy", np.ones((std_rows, 4)))
    return [f"mean={tmp_path / 'mean.npy'}", f"std={tmp_path / 'std.npy'}"]


def test_npy_header_claiming_a_huge_shape(gausskl, tmp_path):
    # 2.4 GB claimed (an allocation that would succeed), 64 bytes present.
    image = npy_image("(300000000,)", bytes(64))
    assert_fails_fast(gausskl, tmp_path, write_npy_spec(tmp_path, image),
                      r"mean\.npy", r"expected 2400000000 bytes of data for shape \(300000000,\)",
                      r"found 64")


@pytest.mark.parametrize("shape", ["(4611686018427387904, 4)", "(3037000500, 3037000500)",
                                   "(1152921504606846976,)"])
def test_npy_shape_whose_size_overflows_int64(gausskl, tmp_path, shape):
    assert_fails_fast(gausskl, tmp_path, write_npy_spec(tmp_path, npy_image(shape)),
                      r"mean\.npy", re.escape(shape), r"overflows int64")


def test_npy_dimension_beyond_int64(gausskl, tmp_path):
    image = npy_image("(99999999999999999999, 4)")
    assert_fails_fast(gausskl, tmp_path, write_npy_spec(tmp_path, image),
                      r"mean\.npy", r"99999999999999999999 does not fit in int64")


def zip_archive(entries):
    """A zip of (name, method, stored bytes, declared size, crc) entries, exactly as told."""
    body, directory = b"", b""
    for name, method, payload, declared, crc in entries:
        # version needed, flags, method, time, date, crc, sizes, name and extra field lengths
        fields = struct.pack("<HHHHHIIIHH", 20, 0, method, 0, 0, crc, len(payload), declared,
                             len(name), 0)
        directory += (b"PK\x01\x02" + struct.pack("<H", 20) + fields +
                      struct.pack("<HHHII", 0, 0, 0, 0, len(body)) + name.encode())
        body += b"PK\x03\x04" + fields + name.encode() + payload
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), len(directory),
                      len(body), 0)
    return body + directory + end


def raw_deflate(data):
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    return packer.compress(data) + packer.flush()


def test_npz_entry_claiming_more_than_deflate_can_produce(gausskl, tmp_path):
    std = np.ones((2, 4))
    image = npy_image("(2, 4)", std.tobytes())
    packed = raw_deflate(image)
    path = tmp_path / "bomb.npz"
    path.write_bytes(zip_archive([("mean.npy", 8, packed, 0xFFFFFFF0, zlib.crc32(image)),
                                  ("std.npy", 8, packed, len(image), zlib.crc32(image))]))
    assert_fails_fast(gausskl, tmp_path, [path], r"bomb\.npz", r"entry 'mean\.npy'",
                      rf"declares 4294967280 bytes from {len(packed)} compressed bytes",
                      r"zip bomb")


def test_npz_entry_whose_size_is_a_plausible_lie(gausskl, tmp_path, rng):
    # 2 MB of incompressible data that claims to inflate to 2 GB, within deflate's 1032:1: only
    # inflating reveals the lie, and that must happen before 2 GB are allocated for the array.
    data = rng.bytes(2 << 20)
    claimed = 2_000_000_000
    image = npy_image(f"({claimed // 8},)", data)
    packed = raw_deflate(image)
    declared = len(image) - len(data) + claimed
    path = tmp_path / "liar.npz"
    path.write_bytes(zip_archive([("mean.npy", 8, packed, declared, zlib.crc32(image))]))
    assert_fails_fast(gausskl, tmp_path, [path], r"liar\.npz", r"entry 'mean\.npy'",
                      rf"deflate data ends after {len(image)} of the declared {declared} bytes")


def test_npz_entries_that_overlap(gausskl, tmp_path):
    # The overlapping zip bomb: entries sharing compressed bytes, each inflated in turn.
    np.savez(tmp_path / "p.npz", mean=np.zeros((2, 4)), std=np.ones((2, 4)))
    data = bytearray((tmp_path / "p.npz").read_bytes())
    directory = struct.unpack_from("<I", data, len(data) - 22 + 16)[0]
    std_local = struct.unpack_from("<I", data, directory + 46 + 8 + 42)[0]
    mean_data = 30 + struct.unpack_from("<H", data, 26)[0] + struct.unpack_from("<H", data, 28)[0]
    struct.pack_into("<II", data, directory + 20, std_local - mean_data + 1,
                     std_local - mean_data + 1)
    (tmp_path / "p.npz").write_bytes(bytes(data))
    assert_fails_fast(gausskl, tmp_path, [tmp_path / "p.npz"],
                      r"entries 'mean\.npy' and 'std\.npy' overlap")
