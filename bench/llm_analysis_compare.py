"""Compare the engine with llm-analysis (PyPI) on the same full fine-tuning configurations.

Prints, per configuration, the peak training memory per GPU from both tools, their ratio, the main
components side by side, and the median time of one estimate from each; then summary lines.
Figures, not a test.

llm-analysis runs in its own virtual environment (bench/.venv-llm-analysis, created and filled from
PyPI on first use) through bench/_llm_analysis_worker.py; the engine runs in this process. Both are
given the same architecture numbers (from engine/catalog/models.toml) and both are timed the same
way: warm-up, then the median of --repeats single calls under time.perf_counter.

Units: llm-analysis works in bytes (its printed "GB" are 1024**3); everything here is GiB (2**30).

Usage: python bench/llm_analysis_compare.py [--repeats N] [--models NAME,...] [-v]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import subprocess
import sys
import time
import venv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.catalog import architecture
from engine.contract import estimate_request
from engine.schema import Architecture, ModelRef

HERE = Path(__file__).resolve().parent
VENV = HERE / ".venv-llm-analysis"
WORKER = HERE / "_llm_analysis_worker.py"
# Verified with Python 3.11: llm-analysis 0.2.2 is the newest release (2023-11); transformers is
# pinned so the environment resolves the same way each time (llm-analysis imports it, unused here).
PINS = ("llm-analysis==0.2.2", "transformers==4.31.0")
GIB = float(2**30)

MODELS = ("Llama-2-7B", "Llama-3.1-8B", "Mistral-7B-v0.1", "Llama-2-13B", "Qwen2.5-14B", "Qwen2.5-32B",
          "Llama-3.1-70B")
SEQ_LENS = (2048, 4096)
BATCHES = (1, 4)
PARALLEL = ((1, False), (8, True))  # (GPUs, ZeRO-3): one GPU unsharded, eight with ZeRO-3
CHECKPOINTING = (False, True)
GPU_NAME = "A100 80GB SXM"


@dataclass(frozen=True)
class Case:
    id: int
    model: str
    seq_len: int
    batch_size: int
    gpus: int
    zero3: bool
    checkpointing: bool

    @property
    def label(self) -> str:
        shard = "zero3" if self.zero3 else "none"
        return (f"{self.model} s{self.seq_len} b{self.batch_size} {self.gpus}x{shard} "
                f"{'ckpt' if self.checkpointing else 'no-ckpt'}")

    def request(self) -> dict[str, Any]:
        """CONTRACT.md `estimate --request`: full fine-tuning, bf16 AMP (fp32 master), AdamW."""
        return {
            "model": {"name": self.model}, "method": "full", "bits": 16, "mixed_precision": "amp",
            "optimizer": "adamw", "gradient_checkpointing": self.checkpointing,
            "sharding": "zero3" if self.zero3 else "none",
            "gpus": [{"name": GPU_NAME, "memory_gb": 80, "count": self.gpus}],
            "seq_len": self.seq_len, "batch_size": self.batch_size, "flash_attention": True, "fused_loss": False,
        }

    def worker_case(self, arch: Architecture) -> dict[str, Any]:
        return {
            "id": self.id, "seq_len": self.seq_len, "batch_size": self.batch_size, "gpus": self.gpus,
            "zero3": self.zero3, "checkpointing": self.checkpointing,
            "model": {"name": arch.name, "layers": arch.layers, "hidden": arch.hidden, "heads": arch.heads,
                      "kv_heads": arch.kv_heads, "vocab": arch.vocab, "ffn": arch.ffn, "gated": arch.gated_mlp,
                      "max_seq_len": max(SEQ_LENS)},
        }


def cases(models: tuple[str, ...]) -> list[Case]:
    grid = itertools.product(models, SEQ_LENS, BATCHES, PARALLEL, CHECKPOINTING)
    return [Case(i, m, s, b, n, z, ck) for i, (m, s, b, (n, z), ck) in enumerate(grid)]


def run(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=True, **kwargs)


def ensure_venv() -> Path:
    """bench/.venv-llm-analysis with the pinned llm-analysis from PyPI; created or repaired as needed."""
    python = VENV / "bin" / "python"
    probe = "import importlib.metadata as m; print(m.version('llm-analysis'))"
    if python.exists():
        got = subprocess.run([str(python), "-c", probe], capture_output=True, text=True)
        if got.returncode == 0 and got.stdout.strip() == PINS[0].split("==")[1]:
            return python
    else:
        print(f"creating {VENV.relative_to(HERE.parent)} ...", file=sys.stderr)
        venv.create(VENV, with_pip=True, clear=True)
    print(f"pip install {' '.join(PINS)} ...", file=sys.stderr)
    run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *PINS])
    return python


def theirs(python: Path, selected: list[Case], repeats: int) -> dict[str, Any]:
    job = {"repeats": repeats, "cases": [c.worker_case(architecture(ModelRef(name=c.model))) for c in selected]}
    out = run([str(python), str(WORKER)], input=json.dumps(job))
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def ours(case: Case, repeats: int) -> dict[str, Any]:
    request = case.request()
    answer = estimate_request(request)
    if "error" in answer:
        raise SystemExit(f"{case.label}: {answer['error']}")
    for _ in range(max(3, repeats // 20)):  # warm-up
        estimate_request(request)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        estimate_request(request)
        times.append(time.perf_counter() - t)
    out: dict[str, Any] = dict(answer["per_gpu"])
    out["params"] = answer["trainable_params"]
    out["seconds"] = statistics.median(times)
    return out


def gib(them: dict[str, Any], key: str) -> float:
    return float(them[key]) / GIB


def fmt_time(seconds: float) -> str:
    return f"{seconds * 1e6:.0f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=200, help="timed calls per configuration and tool (median)")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated catalog names")
    ap.add_argument("-v", action="store_true", help="also print every component of every configuration")
    args = ap.parse_args()
    selected = cases(tuple(m.strip() for m in args.models.split(",") if m.strip()))
    for name in {c.model for c in selected}:
        arch = architecture(ModelRef(name=name))
        if arch.heads * arch.head_dim != arch.hidden or arch.experts:
            print(f"warning: {name}: llm-analysis assumes dense attention with head_dim = hidden/heads",
                  file=sys.stderr)

    try:
        python = ensure_venv()
    except subprocess.CalledProcessError as exc:
        print(f"could not install {' '.join(PINS)} from PyPI (is the network up?):\n{exc.stderr[-2000:]}",
              file=sys.stderr)
        return 2
    try:
        job = theirs(python, selected, args.repeats)
    except subprocess.CalledProcessError as exc:
        print(f"llm-analysis worker failed:\n{exc.stderr[-4000:]}", file=sys.stderr)
        return 1
    them = {r["id"]: r for r in job["results"]}

    print(f"llm-analysis {job['version']} (Python {job['python']}) vs gpu-advisor engine (Python "
          f"{sys.version.split()[0]}); full fine-tuning, bf16 AMP + AdamW, flash attention, GiB = 2^30 bytes "
          f"per GPU; time = median of {args.repeats} calls after warm-up, µs.")
    print("ours = reserved peak incl. allocator overhead (CUDA context excluded); theirs = "
          "weights + gradients + optimizer + activations (a plain sum). state = weights + gradients + optimizer; "
          "act = activations + logits. ckpt = HF gradient checkpointing = llm-analysis FULL recomputation.\n")
    print("| configuration | params B ours/theirs | state GiB ours/theirs | act GiB ours/theirs | ours GiB "
          "| theirs GiB | ours/theirs | (ours − overhead)/theirs | µs ours | µs theirs | theirs/ours time |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    ratios, ratios_live, speed = [], [], []
    comp: dict[str, list[float]] = {k: [] for k in ("weights", "gradients", "optimizer", "state", "act ckpt",
                                                    "act no-ckpt")}
    detail = []
    for case in selected:
        o, t = ours(case, args.repeats), them[case.id]
        o_state = o["weights"] + o["gradients"] + o["optimizer"]
        t_state = gib(t, "weights") + gib(t, "gradients") + gib(t, "optimizer")
        o_act = o["activations"] + o["logits"]
        t_act, t_total = gib(t, "activations"), gib(t, "total")
        ratio, live = o["total"] / t_total, (o["total"] - o["overhead"]) / t_total
        ratios.append(ratio)
        ratios_live.append(live)
        speed.append(t["seconds"] / o["seconds"])
        for key in ("weights", "gradients", "optimizer"):
            comp[key].append(o[key] / gib(t, key))
        comp["state"].append(o_state / t_state)
        comp["act ckpt" if case.checkpointing else "act no-ckpt"].append(o_act / t_act)
        print(f"| {case.label} | {o['params'] / 1e9:.2f}/{t['params'] / 1e9:.2f} | {o_state:.1f}/{t_state:.1f} | "
              f"{o_act:.2f}/{t_act:.2f} | {o['total']:.1f} | {t_total:.1f} | {ratio:.2f} | {live:.2f} | "
              f"{fmt_time(o['seconds'])} | {fmt_time(t['seconds'])} | {speed[-1]:.1f}x |")
        detail.append((case, o, t))

    if args.v:
        print("\n| configuration | weights o/t | gradients o/t | optimizer o/t | activations o/t "
              "| logits o/t | overhead (ours) |")
        print("|---|---|---|---|---|---|---|")
        for case, o, t in detail:
            print(f"| {case.label} | {o['weights']:.2f}/{gib(t, 'weights'):.2f} | "
                  f"{o['gradients']:.2f}/{gib(t, 'gradients'):.2f} | {o['optimizer']:.2f}/{gib(t, 'optimizer'):.2f} | "
                  f"{o['activations']:.2f}/{gib(t, 'activations') - gib(t, 'logits'):.2f} | "
                  f"{o['logits']:.2f}/{gib(t, 'logits'):.2f} | {o['overhead']:.2f} |")

    print("\nPer component, ours/theirs (median, min..max over configurations):")
    for key, vals in comp.items():
        if vals:
            print(f"  {key:12} {statistics.median(vals):.2f}  ({min(vals):.2f}..{max(vals):.2f})")
    for label, pick in (("1 GPU, no sharding", lambda c: not c.zero3), ("8 GPUs, ZeRO-3", lambda c: c.zero3),
                        ("gradient checkpointing", lambda c: c.checkpointing),
                        ("no checkpointing", lambda c: not c.checkpointing)):
        sub = [r for c, r in zip(selected, ratios, strict=True) if pick(c)]
        print(f"  total, {label:24} {statistics.median(sub):.2f}  ({min(sub):.2f}..{max(sub):.2f})")
    o_med = statistics.median(o["seconds"] for _, o, _ in detail)
    t_med = statistics.median(t["seconds"] for _, _, t in detail)
    print(f"\nSUMMARY over {len(selected)} configurations: total memory ours/theirs median "
          f"{statistics.median(ratios):.2f} "
          f"(range {min(ratios):.2f}..{max(ratios):.2f}; without our allocator overhead "
          f"{statistics.median(ratios_live):.2f}); time per estimate ours {o_med * 1e6:.0f} µs vs theirs "
          f"{t_med * 1e6:.0f} µs, median theirs/ours {statistics.median(speed):.1f}x "
          f"(range {min(speed):.1f}..{max(speed):.1f}x).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
