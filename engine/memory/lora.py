"""LoRA adapters: which projections carry them and how many parameters they add."""

from __future__ import annotations

from dataclasses import dataclass

from engine.schema import Architecture


@dataclass(frozen=True)
class LoraTargets:
    """Which projections carry adapters: q k v o, gate up down (fc1 fc2 on plain MLPs), lm_head."""

    modules: frozenset[str]
    qkv_fused: bool = False

    @classmethod
    def parse(cls, spec: str) -> LoraTargets:
        spec = (spec or "").strip().lower()
        if spec in ("", "all_linear", "all-linear", "all"):
            return cls(frozenset({"q", "k", "v", "o", "gate", "up", "down"}))
        if spec == "qv":
            return cls(frozenset({"q", "v"}))
        if spec == "qkvo":
            return cls(frozenset({"q", "k", "v", "o"}))
        names = spec.split(":", 1)[1] if ":" in spec else spec
        tokens = {t.strip() for t in names.replace(";", ",").split(",") if t.strip()}
        mapping = {"fc1": "up", "fc2": "down"}
        fused = "qkv_fused" in tokens
        modules = {mapping.get(t, t) for t in tokens if t != "qkv_fused"}
        unknown = modules - {"q", "k", "v", "o", "gate", "up", "down", "lm_head"}
        if unknown:
            raise ValueError(f"unknown LoRA target(s): {', '.join(sorted(unknown))}")
        if fused:
            modules |= {"q", "k", "v"}
        return cls(frozenset(modules), qkv_fused=fused)


def lora_parameters(arch: Architecture, targets: LoraTargets, r: int) -> float:
    """r·Σ(in + out) over the adapted projections, with the real GQA and expert shapes."""
    h, q_dim, kv_dim = arch.hidden, arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim
    mlp_in, mlp_out = arch.hidden, arch.expert_ffn if arch.experts else arch.ffn
    mlp_copies = (arch.experts + arch.shared_experts) if arch.experts else 1
    shapes = {
        "q": (h, q_dim), "k": (h, kv_dim), "v": (h, kv_dim), "o": (q_dim, h),
        "gate": (mlp_in, mlp_out), "up": (mlp_in, mlp_out), "down": (mlp_out, mlp_in),
    }
    if not arch.gated_mlp:
        shapes.pop("gate")
    per_layer = 0.0
    if targets.qkv_fused:
        per_layer += r * (h + q_dim + 2 * kv_dim)
    for name, (fan_in, fan_out) in shapes.items():
        if name not in targets.modules or (targets.qkv_fused and name in ("q", "k", "v")):
            continue
        copies = mlp_copies if name in ("gate", "up", "down") else 1
        per_layer += copies * r * (fan_in + fan_out)
    total = per_layer * arch.layers
    if "lm_head" in targets.modules:
        total += r * (h + arch.vocab)
    return total
