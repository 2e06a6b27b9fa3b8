"""gausskl.dask equals one process bit for bit (issue 37, item 4): pairwise_kl, knn_kl, kl and
kl_standard_normal on a LocalCluster, in 1-row, uneven and 100-row chunks, q = p and q given,
every family and parameterization, float64 and float32, against gk.pairwise_kl, gk.knn_kl,
gk.kl and gk.kl_standard_normal on the whole batches (np.array_equal: the library's entries
depend only on their own two distributions, tests/python/test_batch_invariance.py)."""

import dask
import numpy as np
import pytest

import gausskl as gk
from conftest import PARAMS, arrays, chunked, gaussian

N, M, D, K = 230, 130, 5, 4
SMALL_N, SMALL_M = 6, 4  # in 1-row chunks: SMALL_N * SMALL_M block tasks
UNEVEN_P, UNEVEN_Q = (1, 17, 100, 112), (60, 1, 69)


def _cases(a, b, small_a, small_b):
    """(chunks of p, chunks of q or None for q = p, p's arrays, q's arrays)."""
    return [(100, None, a, None), (100, 100, a, b), (UNEVEN_P, None, a, None),
            (UNEVEN_P, UNEVEN_Q, a, b), (1, None, small_a, None), (1, 1, small_a, small_b)]


@pytest.mark.parametrize("dtype", (np.float64, np.float32), ids=lambda t: t.__name__)
@pytest.mark.parametrize("param", PARAMS)
def test_dask_is_one_process_bit_for_bit(client, rng, param, dtype):
    a, b = arrays(rng, param, N, D, dtype), arrays(rng, param, M, D, dtype)
    small_a, small_b = arrays(rng, param, SMALL_N, D, dtype), arrays(rng, param, SMALL_M, D, dtype)
    lazy, want = [], []
    for p_chunks, q_chunks, pa, qa in _cases(a, b, small_a, small_b):
        dp = chunked(param, pa, p_chunks)
        dq = None if qa is None else chunked(param, qa, q_chunks)
        p, q = gaussian(param, pa), None if qa is None else gaussian(param, qa)
        lazy += [gk.dask.pairwise_kl(dp, dq), *gk.dask.knn_kl(dp, dq, k=K)]
        want += [gk.pairwise_kl(p, q), *gk.knn_kl(p, q, k=K)]
        if qa is None:  # q = p: exclude_self, and q cut apart from p
            lazy += [*gk.dask.knn_kl(dp, k=K, exclude_self=True),
                     *gk.dask.knn_kl(dp, k=K, exclude_self=True, q_rows=min(64, len(pa["mean"])))]
            want += [*gk.knn_kl(p, k=K, exclude_self=True)] * 2
            lazy.append(gk.dask.kl_standard_normal(dp))
            want.append(gk.kl_standard_normal(p))
        else:  # row-wise on the rows both sides have, q cut its own way (made to follow p)
            rows = min(len(pa["mean"]), len(qa["mean"]))
            head = {k: v[:rows] for k, v in pa.items()}
            lazy.append(gk.dask.kl(chunked(param, head, p_chunks if p_chunks != UNEVEN_P
                                           else (1, 17, 100, rows - 118)),
                                   chunked(param, {k: v[:rows] for k, v in qa.items()},
                                           q_chunks)))
            want.append(gk.kl(gaussian(param, head), gaussian(param, {k: v[:rows]
                                                                      for k, v in qa.items()})))
    got = dask.compute(*lazy)  # one round trip for every case
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, i
        assert np.array_equal(g, w), (i, np.max(np.abs(g.astype(np.float64) - w)))
