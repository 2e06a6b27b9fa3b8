"""gk.dask.to_zarr when a task fails while another is still running (a straggler): the straggler
is waited for before the temporary store is removed, whatever scheduler dask.compute would use,
so that nothing of the store reappears after to_zarr has raised.

The straggler is forced: the failing task raises only once the slow one has started, and the slow
one then waits (up to SLOW seconds) for the caller to have seen the error before its chunk is
written. A to_zarr that returned without waiting would see that chunk's directory come back."""

import logging
import concurrent.futures
import functools
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import dask
import dask.array as da
import dask.local
import numpy as np
import pytest
from distributed import Client, LocalCluster

import gausskl as gk
from gausskl.dask import _files

pytest.importorskip("zarr")

SLOW = 2.0  # seconds the straggler waits for the caller to have the error


LIVE = {}  # the Stragglers by id: the tasks (pickled for distributed) find theirs in this process


def _live(key):
    return LIVE[key]


class Straggler:
    """Block 0 raises once block 1 has started; block 1 waits for `raised` (or SLOW seconds),
    then returns its chunk, which is written after."""

    def __init__(self):
        self.started, self.raised, self.finished = (threading.Event() for _ in range(3))
        LIVE[id(self)] = self

    def __reduce__(self):
        return _live, (id(self),)

    def __call__(self, x, block_info=None):
        row = block_info[0]["chunk-location"][0]
        if row == 0:
            assert self.started.wait(30), "the slow task did not start"
            raise ValueError("bad chunk")
        self.started.set()
        self.raised.wait(SLOW)
        self.finished.set()
        return x + 1.0


def fail_with_a_straggler(tmp_path, setup, join=None):
    """join: None when to_zarr is to wait for the straggler, else a function that does."""
    s = Straggler()
    x = da.zeros((2, 3), chunks=(1, 3)).map_blocks(s, dtype=np.float64)
    with setup():
        with pytest.raises(ValueError, match="bad chunk"):
            gk.dask.to_zarr(x, tmp_path / "kl.zarr")
        s.raised.set()
        if join is None:
            assert s.finished.is_set(), "to_zarr returned while a task was still running"
        else:
            join()
        # the straggler is done and wrote nothing after the removal
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            assert os.listdir(tmp_path) == []
            time.sleep(0.02)
        gk.dask.to_zarr(da.ones((4, 3), chunks=(2, 3)), tmp_path / "ok.zarr")
    assert os.listdir(tmp_path) == ["ok.zarr"]


def cluster():
    """Two threads in this process (the Events are shared with the tasks)."""
    return LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                        dashboard_address=None, silence_logs=logging.CRITICAL)


def test_threads(tmp_path):
    fail_with_a_straggler(tmp_path, lambda: dask.config.set(scheduler="threads", num_workers=2))


def test_executor_as_the_scheduler(tmp_path):
    with ThreadPoolExecutor(2) as pool:
        fail_with_a_straggler(tmp_path, lambda: dask.config.set(scheduler=pool))


def test_threads_with_a_pool_in_the_config(tmp_path):
    with ThreadPoolExecutor(2) as pool:
        fail_with_a_straggler(tmp_path, lambda: dask.config.set(scheduler="threads", pool=pool))


def test_a_scheduler_function_of_its_own(tmp_path):
    """A scheduler to_zarr cannot wait for: the straggler's chunk, coming after the removal, is
    not written."""
    futures = []

    def submit(*args, **kwargs):
        futures.append(pool.submit(*args, **kwargs))
        return futures[-1]

    with ThreadPoolExecutor(2) as pool:
        get = functools.partial(dask.local.get_async, submit, 2)
        fail_with_a_straggler(tmp_path, lambda: dask.config.set(scheduler=get),
                              join=lambda: concurrent.futures.wait(futures))


class SlowArray:
    """An array whose writes wait for `release` (after setting `writing`)."""

    def __init__(self, array):
        self.array, self.writing, self.release = array, threading.Event(), threading.Event()

    def __setitem__(self, key, value):
        self.writing.set()
        assert self.release.wait(30)
        self.array[key] = value


def test_the_removal_waits_for_a_write_under_way(tmp_path):
    store = str(tmp_path / "store")
    _files.live_zarr_store(store)
    target = _files.live_zarr_array(store, None, da.zeros((4, 3), chunks=(2, 3)))
    target.array = slow = SlowArray(target.array)
    writer = threading.Thread(target=target.__setitem__, args=(slice(0, 2), np.ones((2, 3))))
    writer.start()
    assert slow.writing.wait(30)
    remover = threading.Thread(target=_files.remove_zarr_store, args=(store,))
    remover.start()
    remover.join(0.5)
    assert remover.is_alive(), "the removal did not wait for the write under way"
    assert os.listdir(tmp_path) == ["store"]
    slow.release.set()
    writer.join(30)
    remover.join(30)
    assert os.listdir(tmp_path) == []
    target[2:4] = np.ones((2, 3))  # a write after the removal writes nothing
    assert os.listdir(tmp_path) == []


def test_client_named_by_the_config_not_the_default(tmp_path):
    """A Client that is not the default one, set as Dask's scheduler: dask.compute runs on it."""
    with cluster() as c, Client(c, set_as_default=False) as client:
        fail_with_a_straggler(tmp_path, lambda: dask.config.set(scheduler=client))


def test_default_client_without_current_client(tmp_path, monkeypatch):
    """The CI failure of test_faults.py::test_no_partial_zarr_store_on_the_local_scheduler:
    `_current_client` made to find none while the module's Client is still Dask's scheduler
    ("dask.distributed" in the config), so dask.compute ran on it."""
    monkeypatch.setattr(gk.dask, "_current_client", lambda: None)
    with cluster() as c, Client(c):
        assert dask.config.get("scheduler") == "dask.distributed"
        fail_with_a_straggler(tmp_path, lambda: dask.config.set(num_workers=2))
