"""A short Python session with gausskl, printed as an interpreter transcript that can be pasted
as it stands: each step says what it computes and why, shows its code and runs exactly that code
(every name it uses is defined in it or an earlier step)."""

import ast
import textwrap

STEPS = [
    (
        "B = 1024 diagonal Gaussians over H = 256 dimensions: means mu and standard deviations"
        " std, [B, H] each",
        """\
import time
import torch
import gausskl as gk
_ = torch.manual_seed(0)
B, H = 1024, 256
mu, std = torch.randn(B, H), torch.rand(B, H) + 0.5
gk.__version__, torch.__version__""",
    ),
    (
        "KL(p_i || p_j) for every pair: the [B, B] matrix that the PyTorch forum thread (seed"
        " 000) builds by broadcasting to [B, B, H] (seconds and gigabytes at this size), in one"
        " call; KL(p_i || p_i) is exactly 0",
        """\
start = time.perf_counter()
kl = gk.pairwise_kl(gk.DiagGaussian(mu, std=std))
milliseconds = (time.perf_counter() - start) * 1e3
tuple(kl.shape), kl.dtype, round(milliseconds, 1), bool((kl.diagonal() == 0).all())""",
    ),
    (
        "A VAE's prior term, KL(p_i || N(0, I)) summed, with gradients through torch.autograd;"
        " with logvar = 0 it is |mean|^2 / 2 per row, so the gradient must equal the mean",
        """\
mean = mu[:4].clone().requires_grad_()
prior = gk.kl_standard_normal(gk.DiagGaussian(mean, logvar=torch.zeros(4, H))).sum()
prior.backward()
round(prior.item(), 3), torch.allclose(mean.grad, mean.detach())""",
    ),
    (
        "Retrieval: for each of 3 queries (the first 3 Gaussians), the 10 database Gaussians"
        " (all B) with the smallest KL(query || item), ascending; each query finds itself first,"
        " at KL 0",
        """\
queries = gk.DiagGaussian(mu[:3], std=std[:3])
database = gk.DiagGaussian(mu, std=std)
idx, dist = gk.knn_kl(queries, database, k=10)
idx[:, :5]
dist[:, :5]""",
    ),
    (
        "Bad input is refused with one line naming the operation, the array, the index and the"
        " rule broken",
        """\
gk.kl(gk.DiagGaussian(mu[:2], std=-std[:2]), queries)""",
    ),
]


def run(code, namespace):
    """Runs code statement by statement as the interpreter does: each shown after `>>> `, and
    the value of each expression statement printed (unless None). Stops at a ValueError, which is
    shown as the interpreter's last line would show it."""
    for statement in ast.parse(code).body:
        for line in ast.get_source_segment(code, statement).splitlines():
            print(f">>> {line}")
        try:
            if isinstance(statement, ast.Expr):
                value = eval(compile(ast.Expression(statement.value), "<demo>", "eval"), namespace)
                if value is not None:
                    print(repr(value))
            else:
                exec(compile(ast.Module([statement], []), "<demo>", "exec"), namespace)
        except ValueError as e:
            print(f"ValueError: {e}")
            return


def main():
    namespace = {}
    for why, code in STEPS:
        print(textwrap.fill(why, 96, initial_indent="# ", subsequent_indent="# "))
        run(code, namespace)
        print()


if __name__ == "__main__":
    main()
