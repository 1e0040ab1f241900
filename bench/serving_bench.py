"""Print the time of one serving answer in process (`engine.serving.serve` + the contract block), for a question
with its GPUs named and one without (the arrangement search over the candidate GPUs). Figures, not a test.

Usage: python bench/serving_bench.py
"""

from __future__ import annotations

import statistics
import time

from engine.schema import Request
from engine.serving import serve, serving_block

CASES = {
    "70B, 4xH100, 32 users at 8k": {"model": {"name": "Llama-3.1-70B"}, "method": "inference",
                                    "serving_engine": "vllm", "concurrency": 32, "seq_len": 8192,
                                    "gpus": [{"name": "H100 SXM", "count": 4}]},
    "32B, 1xH100, 16 users at 32k (does not fit)": {"model": {"name": "Qwen2.5-32B"}, "method": "inference",
                                                    "serving_engine": "vllm", "concurrency": 16, "seq_len": 32768,
                                                    "gpus": [{"name": "H100 SXM", "count": 1}]},
    "70B, no GPU named (search)": {"model": {"name": "Llama-3.1-70B"}, "method": "inference",
                                   "serving_engine": "vllm", "concurrency": 32, "seq_len": 8192},
    "Gemma-3-27B, SGLang fp8, 2xH200": {"model": {"name": "Gemma-3-27B"}, "method": "inference",
                                        "serving_engine": "sglang", "quantization": "fp8", "concurrency": 64,
                                        "seq_len": 16384, "gpus": [{"name": "H200 SXM", "count": 2}]},
    "8B Q4_K_M, llama.cpp, RTX 4090": {"model": {"name": "Llama-3.1-8B"}, "method": "inference",
                                       "serving_engine": "llama.cpp", "quantization": "gguf:q4_k_m",
                                       "concurrency": 4, "seq_len": 8192, "gpus": [{"name": "RTX 4090"}]},
}


def main() -> int:
    print("| case | median ms | p90 ms |")
    print("|---|---|---|")
    for label, data in CASES.items():
        request = Request.model_validate(data)
        serving_block(serve(request))  # warm the catalogs
        times = []
        for _ in range(50):
            t = time.perf_counter()
            serving_block(serve(request))
            times.append((time.perf_counter() - t) * 1000)
        times.sort()
        print(f"| {label} | {statistics.median(times):.2f} | {times[int(len(times) * 0.9)]:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
