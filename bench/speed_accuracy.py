"""How close the time model comes to published training throughput.

    .venv/bin/python bench/speed_accuracy.py              # tables by method and by GPU, before and after
    .venv/bin/python bench/speed_accuracy.py --rows       # every run
    .venv/bin/python bench/speed_accuracy.py --markdown   # the README table

Runs: engine/catalog/speed_measured.toml (llm-foundry, Qwen, LLaMA-Factory, torchtune; each with its source).
Error of tokens/s = predicted / measured - 1 (negative: we say slower than it ran); error of hours = measured /
predicted - 1; bias = the median signed error. "before -> after": the model at BASELINE (git show) and now, on
the same rows.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine import speed  # noqa: E402
from engine.catalog import architecture  # noqa: E402
from engine.schema import Architecture, ModelConfig, ModelRef, Scenario  # noqa: E402

DATA = ROOT / "engine" / "catalog" / "speed_measured.toml"
BASELINE = "fe9e834"  # main before the issue-11 time model


@dataclass
class Run:
    source: str
    group: str  # method, and the stack when it is not the one modelled
    scored: bool
    row: dict[str, Any]
    scenario: Scenario
    measured: float  # tokens/s, all GPUs


def load_runs() -> tuple[list[Run], list[dict[str, Any]]]:
    data = tomllib.loads(DATA.read_text())
    archs: dict[str, Architecture] = {}
    runs = []
    for block in data["set"]:
        for row in block["runs"]:
            name = row["model"]
            key = f"{name}:{row.get('params')}"
            if key not in archs:
                spec = data.get("models", {}).get(name)
                ref = ModelRef(name=name, params_b=row["params"] / 1e9 if "params" in row else None,
                               config=ModelConfig(**spec["config"]) if spec else None)
                archs[key] = architecture(ref)
            method = row["method"]
            scenario = Scenario(
                arch=archs[key], method=method, bits=4 if method == "qlora" else 16, optimizer="adamw",
                mixed_precision="amp", lora_rank=8, lora_targets="all_linear", seq_len=row["seq"],
                batch_size=row["micro_batch"], gradient_checkpointing=row["ckpt"],
                flash_attention=row.get("flash", True), fused_loss=False, sharding=row["sharding"],
                offload=row.get("offload", False), gpu_count=row["count"], assumptions=[])
            if "tokens_per_s" in row:
                measured = float(row["tokens_per_s"])
            else:
                measured = row["count"] * row["accum"] * row["micro_batch"] * row["seq"] / row["step_s"]
            group = method
            if row.get("quant") == "gptq":
                group += " (GPTQ kernels)"
            if row.get("stack") == "unsloth":
                group += " (Unsloth)"
            runs.append(Run(block["source"], group, block.get("scored", True), row, scenario, measured))
    return runs, data.get("ratio", [])


def baseline_module() -> ModuleType | None:
    """The time model at BASELINE, loaded from git into a temporary folder (None without git)."""
    try:
        code = subprocess.run(["git", "show", f"{BASELINE}:engine/speed.py"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout
        toml = subprocess.run(["git", "show", f"{BASELINE}:engine/catalog/speed.toml"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    folder = Path(tempfile.mkdtemp(prefix="speed_before_"))
    (folder / "catalog").mkdir()
    (folder / "speed.py").write_text(code)
    (folder / "catalog" / "speed.toml").write_text(toml)
    spec = importlib.util.spec_from_file_location("speed_before", folder / "speed.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def predict_after(run: Run) -> float:
    return speed.training_time(run.scenario, run.row["gpu"], run.row["count"],
                               accumulation=run.row["accum"]).tokens_per_second


def predictor_before(module: ModuleType | None) -> Callable[[Run], float] | None:
    if module is None:
        return None

    def predict(run: Run) -> float:
        return float(module.training_time(run.scenario, run.row["gpu"], run.row["count"]).tokens_per_second)

    return predict


def stats(errors: list[float]) -> tuple[float, float, float]:
    """(median |error|, worst |error| with its sign, median signed error)."""
    worst = max(errors, key=abs)
    return statistics.median(abs(e) for e in errors), worst, statistics.median(errors)


def table(title: str, runs: list[Run], key: Callable[[Run], str], after: dict[int, float],
          before: dict[int, float] | None, markdown: bool) -> list[str]:
    """Per group: median |error| of tokens/s and of hours, the median signed error (bias) and the worst run,
    "before -> after" when the baseline ran."""
    groups: dict[str, list[Run]] = {}
    for r in runs:
        groups.setdefault(key(r), []).append(r)
    head = ["group", "runs", "tokens/s: median abs. error", "bias", "worst", "hours: median abs. error"]
    rows = []
    for name in sorted(groups):
        members = groups[name]

        def figures(pred: dict[int, float], members: list[Run] = members) -> tuple[float, float, float, float]:
            tok = [pred[id(r)] / r.measured - 1 for r in members]
            med, worst, bias = stats(tok)
            hours = statistics.median(abs(r.measured / pred[id(r)] - 1) for r in members)
            return med, bias, worst, hours

        med, bias, worst, hours = figures(after)
        if before is not None:
            bmed, bbias, bworst, bhours = figures(before)
            cells = [f"{bmed:.0%} → {med:.0%}", f"{bbias:+.0%} → {bias:+.0%}", f"{bworst:+.0%} → {worst:+.0%}",
                     f"{bhours:.0%} → {hours:.0%}"]
        else:
            cells = [f"{med:.0%}", f"{bias:+.0%}", f"{worst:+.0%}", f"{hours:.0%}"]
        rows.append([name, str(len(members)), *cells])
    if markdown:
        return [f"**{title}**", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head),
                *("| " + " | ".join(r) + " |" for r in rows), ""]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    return [title, *("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in [head, *rows])]


def ratio_checks(ratios: list[dict[str, Any]]) -> list[str]:
    """The relative facts: our ratio for the same pair of settings."""
    def tps(model: str, method: str, gpu: str, seq: int = 2048, batch: int = 2) -> float:
        arch = architecture(ModelRef(name=model))
        sc = Scenario(arch=arch, method=method, bits=4 if method == "qlora" else 16, optimizer="adamw",
                      mixed_precision="amp", lora_rank=8, lora_targets="all_linear", seq_len=seq, batch_size=batch,
                      gradient_checkpointing=True, flash_attention=True, fused_loss=False, sharding="none",
                      offload=False, gpu_count=1, assumptions=[])
        return speed.training_time(sc, gpu, 1, accumulation=1).tokens_per_second

    ours = {
        "LoRA / full tokens/s, Llama-3.1-8B, RTX 4090":
            tps("Llama-3.1-8B", "lora", "RTX 4090") / tps("Llama-3.1-8B", "full", "RTX 4090"),
        "QLoRA / LoRA tokens/s, Llama-3.1-8B, RTX 4090":
            tps("Llama-3.1-8B", "qlora", "RTX 4090") / tps("Llama-3.1-8B", "lora", "RTX 4090"),
        "QLoRA / LoRA tokens/s (NF4 vs bf16-mixed)":
            tps("Llama-2-7B", "qlora", "A100 40GB SXM", 1024, 4) / tps("Llama-2-7B", "lora", "A100 40GB SXM", 1024, 4),
        "QLoRA / LoRA tokens/s, HF, Llama-2-7B, A100 40GB":
            tps("Llama-2-7B", "qlora", "A100 40GB SXM", 1024, 4) / tps("Llama-2-7B", "lora", "A100 40GB SXM", 1024, 4),
    }
    lines = ["Relative facts (source ratio vs ours)"]
    for r in ratios:
        lines.append(f"  {r['source']:<14} {r['what']:<52} {r['value']:.2f}  ours {ours[r['what']]:.2f}")
    return lines


def offload_check() -> list[str]:
    """ZenFlow (DeepSpeed blog): Llama-2-7B on 4x A100 with ZeRO-Offload, CPU path > 4 s per step."""
    sc = Scenario(arch=architecture(ModelRef(name="Llama-2-7B")), method="full", bits=16, optimizer="adamw",
                  mixed_precision="amp", lora_rank=8, lora_targets="all_linear", seq_len=2048, batch_size=1,
                  gradient_checkpointing=True, flash_attention=True, fused_loss=False, sharding="zero2",
                  offload=True, gpu_count=4, assumptions=[])
    cost = speed.offload_cost(sc, "A100 80GB SXM", 4, accumulation=1)
    return ["Offload (ZenFlow: Llama-2-7B, 4x A100, ZeRO-Offload: CPU path > 4 s per step)",
            f"  ours: CPU Adam + weights back {cost.cpu_seconds_per_step:.1f} s per step, "
            f"{cost.pcie_bytes_per_step / 1e9:.1f} GB over PCIe per GPU per step at {cost.pcie_gbs:.0f} GB/s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", action="store_true", help="print every run")
    parser.add_argument("--markdown", action="store_true", help="the README table")
    parser.add_argument("--no-before", action="store_true", help="skip the baseline model")
    args = parser.parse_args()
    runs, ratios = load_runs()
    scored = [r for r in runs if r.scored]
    after = {id(r): predict_after(r) for r in runs}
    predict = None if args.no_before else predictor_before(baseline_module())
    before = {id(r): predict(r) for r in runs} if predict else None
    main_stack = [r for r in scored if "(" not in r.group]
    out: list[str] = []
    out += table(f"By method ({len(main_stack)} runs of the modelled stacks; other stacks below)", main_stack,
                 lambda r: r.group, after, before, args.markdown)
    out += ["", *table("By GPU (modelled stacks)", main_stack, lambda r: r.row["gpu"], after, before, args.markdown)]
    out += ["", *table("All modelled stacks", main_stack, lambda r: "all", after, before, args.markdown)]
    others = [r for r in scored if "(" in r.group]
    out += ["", *table("Stacks the model does not describe (reported, not calibrated on)", others,
                       lambda r: r.group, after, before, args.markdown)]
    unscored = [r for r in runs if not r.scored]
    out += ["", *table("torchtune (relative only, throughput.md)", unscored, lambda r: r.group, after, before,
                       args.markdown)]
    if not args.markdown:
        out += ["", *ratio_checks(ratios), "", *offload_check()]
    print("\n".join(out))
    if args.rows:
        print("\nsource        model          method gpu              n   seq  mb  acc  measured  after  before")
        for r in runs:
            b = f"{before[id(r)] / r.measured - 1:+.0%}" if before else "-"
            print(f"{r.source:<13} {r.row['model']:<14} {r.group[:6]:<6} {r.row['gpu']:<16} {r.row['count']:>3} "
                  f"{r.row['seq']:>5} {r.row['micro_batch']:>3} {r.row['accum']:>4} {r.measured:>9.0f} "
                  f"{after[id(r)] / r.measured - 1:>+6.0%} {b:>6}")


if __name__ == "__main__":
    main()
