"""The set medians that engine/catalog/speed.toml's fitted figures were read from.

    .venv/bin/python bench/speed_calibrate.py

For every published run (engine/catalog/speed_measured.toml) it solves for the one figure that makes the model
match that run, holding the others at their speed.toml values, and prints the median over each set:
- utilisation of the matmuls, by method and GPU (runs where compute is at least 60 % of the step);
- the LoRA adapters' bytes per element per pass (one-GPU LoRA runs where they are at least 20 % of the step);
- the dispatch floor per layer (Qwen LoRA runs at 256 tokens, where compute is a small part);
- DeepSpeed ZeRO-3's extra per-layer time (Qwen ZeRO-3 on one GPU at 256-1,024 tokens: no communication);
- the overlap of communication with compute (multi-GPU sharded runs where communication is at least 20 %).
"""

from __future__ import annotations

import copy
import statistics
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from speed_accuracy import Run, load_runs

from engine import speed
from engine.speed import hardware

original_calibration = hardware.calibration
ORIGINAL = original_calibration()


def tokens_per_s(run: Run, **kw: Any) -> float:
    step = speed.step_time(run.scenario, run.row["gpu"], run.row["count"], accumulation=run.row["accum"], **kw)
    return step.tokens / step.total


def solve(f: Callable[[float], float], target: float, lo: float, hi: float, increasing: bool) -> float | None:
    """x in [lo, hi] with f(x) = target, by bisection; None when the target is out of reach."""
    a, b = f(lo), f(hi)
    if not (min(a, b) <= target <= max(a, b)):
        return None
    for _ in range(60):
        mid = (lo + hi) / 2
        if (f(mid) < target) == increasing:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@contextmanager
def with_value(path: tuple[str, ...], value: float) -> Iterator[None]:
    """speed.toml with one figure changed: a copy put in the loaded table's place, which is never changed."""
    table = copy.deepcopy(ORIGINAL)
    node = table
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    hardware.calibration = lambda: table  # type: ignore[assignment]
    try:
        yield
    finally:
        hardware.calibration = original_calibration  # type: ignore[assignment]


def main() -> None:
    runs, _ = load_runs()
    scored = [r for r in runs if r.scored and "(" not in r.group]
    print("Implied utilisation of the matmuls (compute >= 60 % of the step):")
    groups: dict[str, list[float]] = {}
    for r in scored:
        step = speed.step_time(r.scenario, r.row["gpu"], r.row["count"], accumulation=r.row["accum"])
        if step.compute < 0.6 * step.total:
            continue
        u = solve(lambda x, r=r: tokens_per_s(r, u=x), r.measured, 0.05, 1.5, True)  # type: ignore[misc]
        if u is not None:
            groups.setdefault(f"{r.scenario.method:<5} {speed.gpu_class(speed.resolve_gpu(r.row['gpu'])):<10} "
                              f"{r.source}", []).append(u)
    for name, values in sorted(groups.items()):
        print(f"  {name:<32} runs {len(values):>3}  median {statistics.median(values):.3f}  "
              f"range {min(values):.2f}-{max(values):.2f}")

    def implied(path: tuple[str, ...], select: Callable[[Run], bool], lo: float, hi: float,
                increasing: bool = False) -> list[float]:
        out = []
        for r in scored:
            if not select(r):
                continue

            def f(x: float, r: Run = r) -> float:
                with with_value(path, x):
                    return tokens_per_s(r)

            value = solve(f, r.measured, lo, hi, increasing)
            if value is not None:
                out.append(value)
        return out

    def adapter_heavy(r: Run) -> bool:
        if r.scenario.method != "lora" or r.scenario.sharding == "zero3" or r.row["count"] > 1:
            return False
        step = speed.step_time(r.scenario, r.row["gpu"], r.row["count"], accumulation=r.row["accum"])
        return step.adapters >= 0.2 * step.total and step.busy > step.dispatch

    for source in ("qwen", "llama-factory"):
        ad = implied(("lora", "bytes_per_element_per_pass"), lambda r, s=source: r.source == s and adapter_heavy(r),
                     0.0, 200.0)
        print(f"LoRA adapter bytes per element per pass ({source}, one GPU, adapters >= 20 % of the step): "
              f"{[round(x, 1) for x in ad]}" + (f", median {statistics.median(ad):.1f}" if ad else ""))
    floor = implied(("dispatch", "seconds_per_layer"),
                    lambda r: r.source == "qwen" and r.scenario.method == "lora" and r.scenario.sharding == "none"
                    and r.row["seq"] == 256, 0.0, 0.05)
    print(f"\nDispatch floor per layer (Qwen LoRA, 256 tokens): {[round(x * 1000, 1) for x in floor]} ms")
    z3 = implied(("dispatch", "zero3_seconds_per_layer"),
                 lambda r: r.source == "qwen" and r.scenario.sharding == "zero3" and r.row["seq"] <= 1024
                 and r.row["count"] == 1, 0.0, 0.1)
    print(f"ZeRO-3 extra per layer (Qwen ZeRO-3 on one GPU, no communication, 256-1,024 tokens): "
          f"{[round(x * 1000, 1) for x in z3]} ms"
          + (f", median {statistics.median(z3) * 1000:.1f}" if z3 else ""))

    def comm_heavy(r: Run) -> bool:
        if r.row["count"] < 2 or r.scenario.sharding not in ("zero3", "fsdp"):
            return False
        step = speed.step_time(r.scenario, r.row["gpu"], r.row["count"], accumulation=r.row["accum"])
        return step.communication >= 0.2 * step.total

    ov = implied(("comm", "overlap"), comm_heavy, 0.0, 1.0, increasing=True)
    print(f"Overlap of ZeRO-3/FSDP communication (multi-GPU runs where it is >= 20 % of the step): "
          f"{[round(x, 2) for x in ov]}" + (f", median {statistics.median(ov):.2f}" if ov else ""))


if __name__ == "__main__":
    main()
