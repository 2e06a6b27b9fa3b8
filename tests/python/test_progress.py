"""progress= of the all-pairs operations: a callable gets (done, total) after each block of rows,
True writes lines to stderr, an exception the callable raises stops the call."""

import numpy as np
import pytest

import gausskl as gk
from gausskl import _progress


@pytest.fixture
def batch(rng):
    return gk.DiagGaussian(rng.normal(size=(3000, 8)), std=rng.uniform(0.5, 2.0, (3000, 8)))


# A budget that leaves room for a few rows of results per block: many blocks.
BUDGET = 8 << 20

OPS = [("pairwise_kl", {}), ("knn_kl", {"k": 3}), ("pairwise", {"kind": "jeffreys"}),
       ("knn", {"k": 3, "kind": "hellinger"})]


@pytest.mark.parametrize("op,kw", OPS, ids=[o for o, _ in OPS])
def test_callable_sees_every_block(batch, op, kw):
    calls = []
    got = getattr(gk, op)(batch, memory_budget=BUDGET, progress=lambda d, t: calls.append((d, t)),
                          **kw)
    assert len(calls) > 2
    assert [d for d, _ in calls] == sorted({d for d, _ in calls})
    assert all(t == 3000 for _, t in calls) and calls[-1][0] == 3000
    want = getattr(gk, op)(batch, memory_budget=BUDGET, **kw)
    for a, b in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        np.testing.assert_array_equal(a, b)  # progress changes nothing


def test_true_writes_lines_to_stderr(batch, capsys, monkeypatch):
    monkeypatch.setattr(_progress, "EVERY_SECONDS", 0.0)
    gk.pairwise_kl(batch, memory_budget=BUDGET, progress=True)
    lines = capsys.readouterr().err.strip().split("\n")
    assert len(lines) > 2
    assert lines[0].startswith("[pairwise_kl] ") and " / 3,000 rows (" in lines[0]
    assert "rows/s, about " in lines[0] and lines[0].endswith(" left")
    assert lines[-1].startswith("[pairwise_kl] 3,000 rows done in ")
    gk.pairwise(batch, kind="kl", memory_budget=BUDGET, progress=True)
    assert capsys.readouterr().err.startswith("[pairwise] ")


def test_lines_wait_between_reports():
    lines = []

    class Stream:
        def write(self, s):
            lines.append(s)

        def flush(self):
            pass

    report = _progress.Lines("knn", every=3600.0, stream=Stream())
    for done in range(0, 100, 10):
        report(done, 100)
    report(100, 100)
    text = "".join(lines).strip().split("\n")
    assert len(text) == 1 and text[0].startswith("[knn] 100 rows done in ")


def test_an_exception_stops_the_call(batch):
    class Stop(Exception):
        pass

    def stop(done, total):
        raise Stop(done)

    with pytest.raises(Stop):
        gk.pairwise_kl(batch, memory_budget=BUDGET, progress=stop)
    with pytest.raises(Stop):
        gk.knn(batch, None, 2, kind="wasserstein2", memory_budget=BUDGET, progress=stop)


def test_progress_type():
    p = gk.DiagGaussian(np.zeros((2, 2)), std=np.ones((2, 2)))
    with pytest.raises(TypeError, match=r"^\[pairwise_kl\] progress must be True, False, None or "
                                        r"a callable f\(done, total\), found str$"):
        gk.pairwise_kl(p, progress="yes")
