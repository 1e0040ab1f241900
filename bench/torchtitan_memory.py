"""Print our per-GPU peak against torchtitan's published memory figures (FSDP2, CP, TP, PP on H100s): a held-out
check of the PyTorch-native parallelism path. No constant was fitted to these rows.

Usage: python bench/torchtitan_memory.py

The figures are torchtitan's own benchmark tables (pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md
at b5bcd76c: torchtitan 9dec370ad, torch 1963fc8, Grand Teton H100 with 96 GB HBM2e, "Memory(GiB)", the maximum
over the GPUs). Each row is the request its table states: Llama 3.1, full training, FSDP over the data-parallel
ranks, the table's TP / PP / CP degrees and sequence length, activation checkpointing on (selective in tables 1 and
3, full elsewhere: the request has one switch). Under pipeline parallelism torchtitan splits the local batch into
as many micro-batches as there are stages (torchtitan/config_manager.py `--experimental.pipeline_parallel_microbatches`
default: "the number of pipeline stages"), so the micro-batch is local batch / PP. Where a table has a plain row
(no torch.compile, no Float8, no AsyncTP) that row is used; tables 2, 5 and 6 have only compiled Float8 runs, which
the request cannot say. A script that prints figures, not a test.
"""

from __future__ import annotations

import statistics
from typing import Any

from engine.contract import estimate_request

CARD = [{"name": "H100", "memory_gb": 96}]


def row(model: str, gpus: int, seq: int, local_batch: int, tp: int = 1, pp: int = 1, cp: int = 1,
        sac: bool = False, compiled: bool = False, float8: bool = False, async_tp: bool = False) -> dict[str, Any]:
    q: dict[str, Any] = {"model": {"name": model}, "stage": "sft", "method": "full", "seq_len": seq,
                         "batch_size": local_batch // pp, "sharding": "fsdp", "gradient_checkpointing": True,
                         "flash_attention": True, "gpus": [{**CARD[0], "count": gpus}], "framework": "torchtitan"}
    # CONTRACT v2.1 (docs/contract-training.md): what the table states about the run
    for key, on in (("selective_checkpointing", sac), ("torch_compile", compiled), ("float8", float8),
                    ("async_tp", async_tp)):
        if on:
            q[key] = True
    for key, degree in (("tensor_parallel", tp), ("pipeline_parallel", pp), ("context_parallel", cp)):
        if degree > 1:
            q[key] = degree
    return q


F8 = {"compiled": True, "float8": True}  # tables 2, 4, 5 and 6: torch.compile + Float8 (+ AsyncTP in 5 and 6)

# (table, what the row is, request, published GiB)
ROWS: list[tuple[str, str, dict[str, Any], float]] = [
    ("1", "8B FSDP 8, bs 2, 8K, selective AC", row("Llama-3.1-8B", 8, 8192, 2, sac=True), 82.4),
    ("1", "8B FSDP 8, bs 2, 8K, selective AC, compile", row("Llama-3.1-8B", 8, 8192, 2, sac=True, compiled=True),
     77.0),
    ("1", "8B FSDP 8, bs 2, 8K, selective AC, compile, Float8",
     row("Llama-3.1-8B", 8, 8192, 2, sac=True, compiled=True, float8=True), 76.8),
    ("2", "8B FSDP 8, CP 1, 32K (compile, Float8)", row("Llama-3.1-8B", 8, 32768, 1, **F8), 83.9),
    ("2", "8B FSDP 4, CP 2, 64K (compile, Float8)", row("Llama-3.1-8B", 8, 65536, 1, cp=2, **F8), 84.2),
    ("2", "8B FSDP 2, CP 4, 128K (compile, Float8)", row("Llama-3.1-8B", 8, 131072, 1, cp=4, **F8), 84.0),
    ("2", "8B FSDP 1, CP 8, 256K (compile, Float8)", row("Llama-3.1-8B", 8, 262144, 1, cp=8, **F8), 84.5),
    ("3", "8B FSDP 128, bs 2, 8K, selective AC", row("Llama-3.1-8B", 128, 8192, 2, sac=True), 67.0),
    ("3", "8B FSDP 128, bs 2, 8K, selective AC, compile",
     row("Llama-3.1-8B", 128, 8192, 2, sac=True, compiled=True), 62.0),
    ("4", "70B FSDP 32 x TP 8, bs 16, 8K (compile, Float8)", row("Llama-3.1-70B", 256, 8192, 16, tp=8, **F8), 71.9),
    ("4", "70B FSDP 32 x TP 8, bs 16, 8K (compile, Float8, AsyncTP)",
     row("Llama-3.1-70B", 256, 8192, 16, tp=8, async_tp=True, **F8), 67.6),
    ("5", "405B FSDP 8 x TP 8 x PP 8 1F1B, bs 32, 8K (compile, Float8, AsyncTP)",
     row("Llama-3.1-405B", 512, 8192, 32, tp=8, pp=8, async_tp=True, **F8), 82.5),
    ("6", "405B FSDP 8 x TP 8 x PP 8, CP 1, 32K, bs 8",
     row("Llama-3.1-405B", 512, 32768, 8, tp=8, pp=8, async_tp=True, **F8), 75.3),
    ("6", "405B FSDP 4 x TP 8 x PP 8, CP 2, 64K, bs 8",
     row("Llama-3.1-405B", 512, 65536, 8, tp=8, pp=8, cp=2, async_tp=True, **F8), 75.9),
    ("6", "405B FSDP 2 x TP 8 x PP 8, CP 4, 128K, bs 8",
     row("Llama-3.1-405B", 512, 131072, 8, tp=8, pp=8, cp=4, async_tp=True, **F8), 77.1),
    ("6", "405B FSDP 1 x TP 8 x PP 8, CP 8, 256K, bs 8",
     row("Llama-3.1-405B", 512, 262144, 8, tp=8, pp=8, cp=8, async_tp=True, **F8), 84.9),
]


def main() -> int:
    errors: list[float] = []
    right = 0
    print("| table | run | published GiB | ours GiB | error | verdict |\n|---|---|---|---|---|---|")
    for table, what, q, truth in ROWS:
        out = estimate_request(q)
        est = (out.get("per_gpu") or {}).get("total")
        verdict = str(out.get("verdict") or out.get("error") or "-")
        right += verdict in ("fits", "tight")  # every run ran
        if est is None:
            print(f"| {table} | {what} | {truth} | - | - | {verdict} |")
            continue
        e = float(est) / truth - 1
        errors.append(e)
        print(f"| {table} | {what} | {truth} | {est:.1f} | {e:+.0%} | {verdict} |")
    band = sum(-0.10 <= e <= 0.25 for e in errors)
    median = statistics.median(abs(e) for e in errors)
    print(f"\ntorchtitan: median |error| {median:.1%}, {band}/{len(errors)} in band, "
          f"worst under-estimate {min(errors):+.0%}; runs told fits/tight {right}/{len(ROWS)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
