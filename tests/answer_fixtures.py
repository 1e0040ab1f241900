"""Fixed Answers for the view tests: built here by hand, so that a view test checks the wording and the
layout of a known Answer, not what the planner happens to find today."""

from __future__ import annotations

from typing import Any

from engine.schema import (
    Architecture,
    Arrangement,
    Assumption,
    Breakdown,
    Change,
    Comparison,
    GpuLine,
    Monthly,
    Note,
    Plan,
    Request,
    Scenario,
    TrainingAnswer,
)


def arch(name: str = "70B", *, known: bool = False, params: float = 70e9) -> Architecture:
    return Architecture(name=name, known=known, params=params, active_params=params, layers=80, hidden=8192,
                        ffn=28672, heads=64, kv_heads=8, head_dim=128, vocab=128256, tied=False, gated_mlp=True,
                        experts=0, experts_per_token=0, expert_ffn=28672, shared_experts=0,
                        linear_params=params * 0.97, embedding_params=params * 0.03)


def scenario(method: str = "qlora", **changes: Any) -> Scenario:
    fields: dict[str, Any] = dict(
        arch=arch(), method=method, bits=4 if method == "qlora" else 16,
        optimizer=None if method == "inference" else "paged_adamw", mixed_precision="amp",
        lora_rank=16 if method in ("lora", "qlora") else 0, lora_targets="all_linear", seq_len=2048, batch_size=1,
        gradient_checkpointing=method != "inference", flash_attention=True, fused_loss=False, sharding="none",
        offload=False, gpu_count=1,
        assumptions=[Assumption(key="architecture", value="Llama-3.1-70B"), Assumption(key="seq_len", value=2048),
                     Assumption(key="gradient_checkpointing", value="on"), Assumption(key="lora_rank", value=16)],
    )
    fields.update(changes)
    return Scenario(**fields)


def breakdown(total: float = 58.5, **changes: float) -> Breakdown:
    fields = dict(weights=39.5, adapters=0.76, gradients=0.76, optimizer=1.52, activations=4.4, logits=5.4,
                  kv_cache=0.0, overhead=6.2, total=total, cuda_context=0.4, cpu_ram=0.0, trainable_params=2e8)
    fields.update(changes)
    return Breakdown(**fields)


def plan(gpu: str = "H100 SXM", count: int = 1, memory: float = 80.0, **changes: Any) -> Plan:
    fields: dict[str, Any] = dict(
        gpu=gpu, count=count, techniques=[], per_gpu_gb=58.5, memory_gb=memory, headroom_gb=19.5, hours=None,
        hours_per_100m_tokens=83.3, usd=None, usd_per_hour=3.29 * count, price_date="2026-11-09", slowdown=1.0,
        per_hour=3.29 * count, cost_per_1m_tokens=2.74)
    fields.update(changes)
    return Plan(**fields)


def answer(**changes: Any) -> TrainingAnswer:
    """An answer with one H100 asked and a 70B QLoRA that fits on it; `changes` replace fields."""
    s = changes.pop("scenario", None) or scenario()
    b = changes.pop("breakdown", None) or breakdown()
    fields: dict[str, Any] = dict(
        request=Request(), scenario=s, breakdown=b, verdict="fits",
        asked=Arrangement(gpu="H100 SXM", memory_gb=80.0, count=1), need_gb=b.total + b.cuda_context,
        cluster_gb=(b.total + b.cuda_context) * s.gpu_count, plans=[plan()], assumptions=s.assumptions,
        price_date="2026-11-09", shape_reference=None if s.arch.known else "Llama-3.1-70B", capacity_gib=79.19,
        capacity=[GpuLine(gpu="H100 SXM", memory_gb=80.0, fits=True, role="asked"),
                  GpuLine(gpu="RTX 4090", memory_gb=24.0, fits=False, role="common"),
                  GpuLine(gpu="A100 80GB SXM", memory_gb=80.0, fits=True, role="common"),
                  GpuLine(gpu="H200 SXM", memory_gb=141.0, fits=True, role="common")],
    )
    fields.update(changes)
    return TrainingAnswer(**fields)


def no_fit(**changes: Any) -> TrainingAnswer:
    """8B LoRA at 8k on one RTX 4090: 51 GB of 24, with changes and plans on more GPUs."""
    fields: dict[str, Any] = dict(
        scenario=scenario("lora", arch=arch("Llama-3.1-8B", known=True, params=8.03e9), seq_len=8192,
                          optimizer="adamw", assumptions=[Assumption(key="optimizer", value="adamw")]),
        breakdown=breakdown(50.8, weights=15.0, logits=30.0), verdict="no_fit",
        asked=Arrangement(gpu="RTX 4090", memory_gb=24.0, count=1), capacity_gib=23.66,
        changes=[Change(key="shorter_context", params={"from": 8192, "to": 4096}, saves_gb=17.2, fits=False,
                        total_gb=34.0),
                 Change(key="fused_loss", params={}, saves_gb=27.1, fits=True, total_gb=24.1)],
        plans=[plan("RTX 4090", 4, 24.0, techniques=["fused_loss", "zero3"], slowdown=1.3)],
        capacity=lines(("RTX 4090", 24.0, False, "asked"), ("RTX 4090", 24.0, False, "plan"),
                       ("RTX 4090", 24.0, False, "common"), ("A100 80GB SXM", 80.0, True, "common"),
                       ("H100 SXM", 80.0, True, "common"), ("H200 SXM", 141.0, True, "common")),
    )
    fields.update(changes)
    return answer(**fields)


def lines(*rows: tuple[str, float, bool, str]) -> list[GpuLine]:
    return [GpuLine(gpu=g, memory_gb=m, fits=f, role=r) for g, m, f, r in rows]  # type: ignore[arg-type]


COMMON_NONE_FIT = (("RTX 4090", 24.0, False, "common"), ("A100 80GB SXM", 80.0, False, "common"),
                   ("H100 SXM", 80.0, False, "common"), ("H200 SXM", 141.0, False, "common"))


def inference() -> TrainingAnswer:
    """Llama 3.1 8B served, no GPU named."""
    return answer(scenario=scenario("inference", arch=arch("Llama-3.1-8B", known=True, params=8.03e9)),
                  breakdown=breakdown(16.9, weights=15.0, adapters=0.0, gradients=0.0, optimizer=0.0, activations=0.3,
                                      logits=0.1, kv_cache=0.5, overhead=1.0),
                  verdict=None, asked=None, shape_reference=None)


def full(params_b: float = 7.0, total: float = 120.0) -> TrainingAnswer:
    """Full fine-tuning of a bare size, no GPU named."""
    return answer(scenario=scenario("full", arch=arch(f"{params_b:g}B", params=params_b * 1e9), lora_rank=0,
                                    lora_targets="", optimizer="adamw"),
                  breakdown=breakdown(total, weights=2 * params_b, adapters=0.0, gradients=4 * params_b,
                                      optimizer=8 * params_b, activations=3.0, logits=1.5, overhead=5.0),
                  verdict=None, asked=None, plans=[],
                  capacity=lines(*COMMON_NONE_FIT) if total > 141 else answer().capacity)


def comparison(**changes: Any) -> TrainingAnswer:
    """A100 against H100 against RTX 3060 for a 100M-token LoRA run."""
    fits_a100 = plan("A100 80GB SXM", hours=40.0, cost_per_1m_tokens=0.51, per_hour=1.29, headroom_gb=40.1)
    fits_h100 = plan("H100 SXM", hours=17.0, cost_per_1m_tokens=0.56, headroom_gb=41.2,
                     techniques=["cpu_offload"], slowdown=1.8)
    fields: dict[str, Any] = dict(
        verdict="compare", asked=Arrangement(gpu="A100 80GB SXM", memory_gb=80.0, count=1),
        comparison=[Comparison(gpu="A100 80GB SXM", count=1, fits=True, need_gb=38.0, memory_gb=80.0,
                               plan=fits_a100),
                    Comparison(gpu="H100 SXM", count=1, fits=True, need_gb=38.0, memory_gb=80.0, plan=fits_h100),
                    Comparison(gpu="RTX 3060", count=1, fits=False, need_gb=38.0, memory_gb=12.0, plan=None)],
        plans=[fits_a100, fits_h100],
    )
    fields.update(changes)
    return answer(**fields)


def with_notes(*notes: Note, **changes: Any) -> TrainingAnswer:
    return answer(notes=list(notes), **changes)


def monthly() -> Monthly:
    return Monthly(gpu="H100 SXM", count=1, currency="USD", monthly_price=1500.0, hourly_price=3.29,
                   break_even_hours=455.9, run_hours=12.0)
