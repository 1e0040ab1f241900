"""Print the speed of the engine: one estimate in process, 1000 requests through one CLI process,
a full plan search, and the cold start of `gpu-advisor ask`. Figures, not a test.

Usage: python bench/estimate_bench.py
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from engine.contract import estimate_request
from engine.plan import plan
from engine.schema import Request

MEASURED = Path(__file__).resolve().parents[2] / "shared" / "data" / "measured-memory.jsonl"


def per_call(fn: Callable[[Any], object], args: Sequence[Any], repeat: int = 3) -> list[float]:
    times = []
    for _ in range(repeat):
        for a in args:
            t = time.perf_counter()
            fn(a)
            times.append(time.perf_counter() - t)
    return times


def main() -> int:
    with MEASURED.open(encoding="utf-8") as f:
        requests = [json.loads(line)["request"] for line in f if line.strip()]
    estimate_request(requests[0])  # load catalogs once
    t = per_call(estimate_request, requests)
    print(f"estimate in process: median {statistics.median(t) * 1e3:.3f} ms, p95 "
          f"{sorted(t)[int(len(t) * 0.95)] * 1e3:.3f} ms over {len(t)} calls")

    stdin = "".join(json.dumps(requests[i % len(requests)]) + "\n" for i in range(1000))
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "bot", "estimate", "--json", "--request"], input=stdin,
                       capture_output=True, text=True, check=True)
    print(f"1000 requests through one `estimate` process: {time.perf_counter() - t0:.2f} s "
          f"({len(p.stdout.splitlines())} answers)")

    plans = [Request.model_validate(r) for r in (
        {"model": {"params_b": 70}, "method": "qlora", "gpus": [{"name": "H100"}]},
        {"model": {"params_b": 13}, "method": "full", "tokens": 2e7, "epochs": 3},
        {"model": {"name": "Llama-3.1-8B"}, "method": "lora", "seq_len": 8192},
    )]
    t = per_call(plan, plans, repeat=5)
    print(f"plan search: median {statistics.median(t) * 1e3:.1f} ms over {len(t)} searches")

    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "bot", "ask", "70B QLoRA на H100?"], capture_output=True, check=True)
    print(f"cold start of `ask`: {time.perf_counter() - t0:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
