"""Case 7 (paper Figs. 1-2): two torch training tasks tuned side by side."""

from __future__ import annotations

import time
from typing import Any

from vlcs_bench.evaluation._harness import Strategy, measure, ncpus, say, timed_runs
from vlcs_bench.evaluation._tasks import on_threads, split_cpus

TITLE = "Hyper-parameter tuning (paper Figs. 1-2)"
MODELS = (
    "a tuning sweep that trains two model variants at once in one process: the "
    "same small GRU on sequences of different lengths (so unequal work). Users "
    "run them on threads with torch's default thread count, or split the threads "
    "equally with torch.set_num_threads (process-wide: one setting for both)."
)


def train(torch: Any, seq_len: int, steps: int, threads: int | None = None) -> float:
    """Train a GRU regressor for `steps` steps; returns the last loss (4 digits)."""
    if threads is not None:
        torch.set_num_threads(threads)
    # A generator of its own: two trainings on threads of one torch would
    # otherwise draw from its one global generator in a racy order.
    g = torch.Generator().manual_seed(0)
    gru = torch.nn.GRU(32, 96, batch_first=True)
    head = torch.nn.Linear(96, 1)
    params = list(gru.parameters()) + list(head.parameters())
    with torch.no_grad():
        for p in params:
            p.copy_((torch.rand(p.shape, generator=g) - 0.5) * 0.2)
    opt = torch.optim.SGD(params, lr=0.01)
    x = torch.randn(64, seq_len, 32, generator=g)
    y = torch.randn(64, 1, generator=g)
    loss = torch.zeros(())
    for _ in range(steps):
        opt.zero_grad()
        out, _ = gru(x)
        loss = torch.nn.functional.mse_loss(head(out[:, -1]), y)
        loss.backward()
        opt.step()
    return round(loss.item(), 4)


def run(quick: bool) -> dict[str, Any]:
    import torch
    import vlcs

    n = ncpus()
    steps = 12 if quick else 30
    lens = (96, 24)
    ca, cb = split_cpus(n, max(1, round(n * lens[0] / sum(lens))))
    say("tuning: importing torch into four contexts (two static, two elastic)")
    a, b = vlcs.VLC(cpus=ca, name="long"), vlcs.VLC(cpus=cb, name="short")
    with a:
        import torch as torch_a
    with b:
        import torch as torch_b
    # The same homes, elastic: when the short training ends, the long one
    # grows to every CPU (torch's OpenMP pool runs dynamic teams in them).
    every = f"0-{n - 1}"
    ea = vlcs.VLC(cpus=ca, elastic=every, name="long-elastic")
    eb = vlcs.VLC(cpus=cb, elastic=every, name="short-elastic")
    with ea:
        import torch as torch_ea
    with eb:
        import torch as torch_eb
    default_threads = torch.get_num_threads()

    def sequential() -> list[float]:
        return [train(torch, lens[0], steps), train(torch, lens[1], steps)]

    def concurrent_default() -> list[float]:
        return on_threads(
            lambda: train(torch, lens[0], steps), lambda: train(torch, lens[1], steps)
        )

    def equal_split() -> list[float]:
        torch.set_num_threads(max(1, n // 2))
        try:
            return concurrent_default()
        finally:
            torch.set_num_threads(default_threads)

    def contexts() -> list[float]:
        fa = a.submit(train, torch_a, lens[0], steps)
        fb = b.submit(train, torch_b, lens[1], steps)
        return [fa.result(), fb.result()]

    def elastic() -> list[float]:
        fa = ea.submit(train, torch_ea, lens[0], steps)
        fb = eb.submit(train, torch_eb, lens[1], steps)
        return [fa.result(), fb.result()]

    group = measure(
        f"two GRU trainings, sequence lengths {lens[0]} and {lens[1]}, {steps} steps",
        [
            Strategy(f"sequential ({default_threads} threads each)", sequential),
            Strategy("concurrent, torch defaults", concurrent_default),
            Strategy(f"concurrent, set_num_threads({max(1, n // 2)})", equal_split),
            Strategy(f"vlcs contexts, tailored cores ({ca} | {cb})", contexts),
            Strategy(f"vlcs elastic contexts ({ca} | {cb}, lending)", elastic),
        ],
        timed_runs(quick),
        ideal_speedup=min(2.0, n),
        note="Ideal: the 2x ceiling of two tasks on two cores (unequal tasks cannot reach "
        "it with a whole-core split on 2 cores). Elastic contexts: the same homes, each may "
        "grow to every CPU while the other is idle. Losses are compared to 4 digits: thread "
        "counts change the order of floating-point sums.",
    )

    # The heatmap: makespan of the two trainings in the same contexts widened
    # to every CPU, for each pair of per-copy thread counts (each copy's own
    # setting).
    say("tuning: thread-split heatmap")
    a.set_allowed_cpus(every)
    b.set_allowed_cpus(every)
    values = []
    for tb in range(1, n + 1):
        row = []
        for ta in range(1, n + 1):
            t = time.perf_counter()
            fa = a.submit(train, torch_a, lens[0], steps, ta)
            fb = b.submit(train, torch_b, lens[1], steps, tb)
            fa.result()
            fb.result()
            row.append(time.perf_counter() - t)
        values.append(row)
    return {
        "groups": [group],
        "heatmaps": [
            {
                "title": "makespan (s) by torch threads per training",
                "x": list(range(1, n + 1)),
                "y": list(range(1, n + 1)),
                "xlabel": f"threads, sequence length {lens[0]}",
                "ylabel": f"threads, sequence length {lens[1]}",
                "label": "seconds (lower is better)",
                "values": values,
            }
        ],
    }
