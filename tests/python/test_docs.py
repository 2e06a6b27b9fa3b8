"""The examples of the docs (package docstring, function docstrings, README), run."""

import doctest

import numpy as np
import pytest

import gausskl as gk
from conftest import needs_torch, run_readme_python


# Every module whose docstrings hold examples; each example makes its own data, so it runs as
# pasted (torch examples need torch).
DOCTESTED = ["gausskl._distributions", "gausskl._frechet", "gausskl._frechet_features",
             "gausskl._mixtures",
             "gausskl._moments",
              pytest.param("gausskl", marks=needs_torch),
              pytest.param("gausskl._ops", marks=needs_torch),
              pytest.param("gausskl._from_torch", marks=needs_torch)]


@pytest.mark.parametrize("module", DOCTESTED)
def test_doctests(module):
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def public_docs():
    """(name, docstring) of the package and each public name."""
    yield "gausskl", gk.__doc__
    for name in gk.__all__:
        yield name, getattr(gk, name).__doc__


def test_every_code_example_in_a_docstring_is_a_doctest():
    """No literal blocks (``::``) of code that nothing runs: examples are ``>>>`` lines, run by
    test_doctests."""
    for name, doc in public_docs():
        assert "::\n" not in doc, f"{name}: a literal block; write the example as a doctest"


PUBLIC_FUNCTIONS = ["kl", "kl_standard_normal", "pairwise_kl", "knn_kl", "from_torch",
                    "DiagGaussian", "FullGaussian", "LowRankGaussian", "fit_gaussian"]


@pytest.mark.parametrize("name", PUBLIC_FUNCTIONS)
def test_help_describes_every_parameter_and_the_result(name):
    """help(gk.NAME) names each parameter in a Parameters section, says what comes back (type
    and dtype), and shows an example."""
    import inspect

    obj = getattr(gk, name)
    doc = inspect.getdoc(obj)
    section = doc[doc.index("Parameters\n----------\n"):]
    section = section[:section.index("\n\n")]
    described = set()
    for line in section.splitlines()[2:]:
        if not line.startswith(" "):  # a header line: "a, b : type"
            described.update(n.strip() for n in line.split(" : ")[0].split(","))
    parameters = [p for p in inspect.signature(obj).parameters.values()
                  if p.kind is not p.VAR_POSITIONAL]
    assert {p.name for p in parameters} == described
    if inspect.isfunction(obj):
        returns = doc[doc.index("Returns\n-------\n"):]
        assert "float32" in returns or "dtype" in returns or name == "from_torch"
    assert "\n>>> " in "\n" + doc


def test_help_of_pairwise_kl_describes_threads_and_torch_path():
    """The issue's example: help(gk.pairwise_kl) said nothing of these and of the result."""
    import inspect

    doc = inspect.getdoc(gk.pairwise_kl)
    assert ("threads : int, default 0\n    The most worker threads the library may use; 0: one "
            "per hardware thread.") in doc
    assert "torch_path : bool or None, default None\n    Which code computes torch tensors" in doc
    assert ("Returns\n-------\nnumpy.ndarray or torch.Tensor\n    ``[N, M]``: KL(p_i || q_j) "
            "at ``[i, j]``") in doc
    assert "float32 when every input is float32, float64 otherwise." in doc


@needs_torch
def test_forum_pairwise_case_in_one_line():
    """The forum's [B, B] matrix: the broadcast code from the thread against the one line."""
    import torch

    B, H = 64, 32
    mu, std = torch.randn(B, H, dtype=torch.float64), torch.rand(B, H, dtype=torch.float64) + 0.5

    # From the thread (KL(p_i || q_j) with p = row i, q = row j), broadcasting to [B, B, H].
    def kl_div(mu_q, std_q, mu_p, std_p):
        k = mu_q.size(-1)
        mu_diff = mu_p - mu_q
        logdet_std_q = torch.sum(2 * torch.log(std_q), dim=-1)
        logdet_std_p = torch.sum(2 * torch.log(std_p), dim=-1)
        fs = torch.sum(std_q**2 / std_p**2, dim=-1) + torch.sum(mu_diff**2 / std_p**2, dim=-1)
        return (fs - k + logdet_std_p - logdet_std_q) * 0.5

    broadcast = kl_div(mu[:, None], std[:, None], mu[None], std[None])

    kl = gk.pairwise_kl(gk.DiagGaussian(mu, std=std))  # the one line

    torch.testing.assert_close(kl, broadcast, rtol=1e-10, atol=1e-10)


@needs_torch
def test_vae_loss_with_kl_standard_normal():
    import torch

    torch.manual_seed(0)
    x = torch.rand(16, 10)
    encoder, decoder = torch.nn.Linear(10, 2 * 4), torch.nn.Linear(4, 10)
    opt = torch.optim.SGD([*encoder.parameters(), *decoder.parameters()], lr=1e-2)
    losses = []
    for _ in range(20):
        mu, logvar = encoder(x).chunk(2, dim=1)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
        recon = torch.nn.functional.mse_loss(decoder(z), x, reduction="sum")
        loss = recon + gk.kl_standard_normal(gk.DiagGaussian(mu, logvar=logvar)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    # The same prior term by hand, and training makes progress.
    mu, logvar = encoder(x).chunk(2, dim=1)
    by_hand = -0.5 * torch.sum(1 + logvar - mu**2 - logvar.exp(), dim=1)
    torch.testing.assert_close(gk.kl_standard_normal(gk.DiagGaussian(mu, logvar=logvar)), by_hand)
    assert losses[-1] < losses[0]


def test_retrieval_ten_nearest_by_kl():
    rng = np.random.default_rng(0)
    db_mu, db_std = rng.normal(size=(500, 16)), rng.uniform(0.5, 2.0, size=(500, 16))
    q_mu = db_mu[:3] + 0.01 * rng.normal(size=(3, 16))  # queries near database items 0, 1, 2
    q_std = db_std[:3]

    idx, dist = gk.knn_kl(gk.DiagGaussian(q_mu, std=q_std), gk.DiagGaussian(db_mu, std=db_std),
                          k=10)

    assert idx.shape == dist.shape == (3, 10)
    np.testing.assert_array_equal(idx[:, 0], [0, 1, 2])
    assert np.all(np.diff(dist, axis=1) >= 0)
    full = gk.pairwise_kl(gk.DiagGaussian(q_mu, std=q_std), gk.DiagGaussian(db_mu, std=db_std))
    np.testing.assert_allclose(dist, np.sort(full, axis=1)[:, :10])


def test_extension_stub_is_current(tmp_path):
    """python/gausskl/_ext.pyi is what nanobind's stubgen makes of the built extension."""
    stubgen = pytest.importorskip("nanobind.stubgen")
    from pathlib import Path

    out = tmp_path / "_ext.pyi"
    stubgen.main(["-q", "-m", "gausskl._ext", "-o", str(out)])
    checked_in = Path(__file__).resolve().parents[2] / "python" / "gausskl" / "_ext.pyi"
    assert out.read_text() == checked_in.read_text(), "regenerate with python -m nanobind.stubgen"


def test_public_stub_names_the_api():
    from pathlib import Path

    import gausskl

    stub = (Path(gausskl.__file__).parent / "__init__.pyi").read_text()
    for name in gausskl.__all__:
        assert f"def {name}(" in stub or f"class {name}(" in stub or f"class {name}:" in stub
    assert (Path(gausskl.__file__).parent / "py.typed").exists()


@needs_torch
def test_readme_python_snippet_runs_as_pasted():
    """The README's Python example, executed as written (its variables defined in it)."""
    namespace = run_readme_python("## Python", "## C++")
    assert tuple(namespace["kl"].shape) == (100, 100)
    assert namespace["mu"].grad.shape == (128, 32) and namespace["E"].grad.shape == (5, 6)
    assert tuple(namespace["idx"].shape) == (3, 10)
