"""A training step's FLOPs per token (the model of DESIGN.md: k · P_matmul plus attention, recompute when
checkpointing) and the share of the GPU's peak the matmuls reach (the step model's calibration, or a published
end-to-end MFU for pretraining and the stacks whose profile says so)."""

from __future__ import annotations

from engine.catalog import Gpu
from engine.frameworks import profile
from engine.schema import Scenario
from engine.speed import hardware
from engine.speed.hardware import by_class
from engine.speed.inference import attention_width


def matmul_params(scenario: Scenario) -> float:
    """Active parameters that take part in matmuls: an untied input embedding is a lookup."""
    arch = scenario.arch
    embedding = 0.0 if arch.tied else float(arch.vocab * arch.hidden)
    return max(arch.active_params - embedding, arch.active_params * 0.5)


def dense_flops_per_token(scenario: Scenario, *, recompute: bool) -> float:
    """k · P_matmul (+ 2 · P_matmul recomputed forward when `recompute`)."""
    k = 6.0 if scenario.method == "full" else 4.0
    return (k + (2.0 if recompute else 0.0)) * matmul_params(scenario)


def attention_flops_per_token(scenario: Scenario, *, recompute: bool) -> float:
    """12 · L · s · h_attn for forward + backward, + 4 · L · s · h_attn recomputed."""
    arch = scenario.arch
    forward = 4.0 * arch.layers * scenario.seq_len * attention_width(arch)
    return 3.0 * forward + (forward if recompute else 0.0)


def training_flops_per_token(scenario: Scenario) -> tuple[float, float]:
    """(hardware FLOPs, model FLOPs) per training token; they differ by the checkpointing recompute."""
    def per_token(recompute: bool) -> float:
        return dense_flops_per_token(scenario, recompute=recompute) + attention_flops_per_token(
            scenario, recompute=recompute)

    if scenario.selective_checkpointing:
        # selective op checkpointing keeps every other matmul's output and the attention's
        # (engine/memory/activations.py selective_saved_per_token_layer): about half the matmuls' forward is
        # recomputed, and no attention; Megatron's selective recomputes the core attention only
        none = per_token(False)
        return none + 0.5 * (dense_flops_per_token(scenario, recompute=True)
                             - dense_flops_per_token(scenario, recompute=False)), none
    return per_token(scenario.gradient_checkpointing), per_token(False)


# ---- utilisation ------------------------------------------------------------------------------------------


def published_mfu(scenario: Scenario, gpu: Gpu) -> tuple[float, float, float] | None:
    """The end-to-end MFU published runs reached (typical, low, high) when the scenario is timed by it: training from
    scratch, or a stack whose profile says so (NeMo / Megatron); None for the fine-tuning step model."""
    prof = profile(scenario.framework)
    if not (scenario.pretraining or prof.constant("published_mfu", 0.0)):
        return None
    if prof.constant("mfu_typical", 0.0):
        # the stack's own published MFU (its profile cites it), times the speed-ups its tables measured for the
        # switches the scenario has on (native_speedup)
        k = native_speedup(scenario)
        return (prof.constant("mfu_typical", 0.0) * k, prof.constant("mfu_low", 0.0) * k,
                prof.constant("mfu_high", 0.0) * k)
    table = hardware.calibration()["published_mfu"]
    key = "fp8" if scenario.train_precision == "fp8" else f"{hardware.gpu_class(gpu)}_bf16"
    band = table.get(key, table["hopper_bf16"])
    return float(band["typical"]), float(band["low"]), float(band["high"])


def native_speedup(scenario: Scenario) -> float:
    """The throughput ratio of the scenario's PyTorch-native switches over the stack's eager bf16 run, as its profile
    cites them (torchtitan's benchmark tables): torch.compile, Float8 linears, AsyncTP. Selective checkpointing
    changes the FLOPs instead (training_flops_per_token)."""
    prof = profile(scenario.framework)
    k = 1.0
    for on, key in ((scenario.compiled, "compile_speedup"), (scenario.float8, "float8_speedup"),
                    (scenario.async_tp, "async_tp_speedup")):
        if on:
            k *= prof.constant(key, 1.0)
    return k


def peak_flops(scenario: Scenario, gpu: Gpu) -> float:
    """The dense peak of the precision the matmuls run in, FLOP/s."""
    if scenario.train_precision == "fp8" and gpu.fp8_tflops:
        return float(gpu.fp8_tflops) * 1e12
    return gpu.bf16_tflops * 1e12


def assumed_speed(scenario: Scenario, gpu: Gpu) -> str | None:
    """What the time assumed, for the answer to say: "40% MFU bf16 (NVIDIA NeMo)"; None for the step model."""
    mfu = published_mfu(scenario, gpu)
    if mfu is None:
        return None
    stack = profile(scenario.framework)
    # from scratch on a fine-tuning stack (TRL + PEFT by default): the MFU is the pretraining runs', said as theirs
    runs = str(hardware.calibration()["published_mfu"]["label"])
    label = stack.label if stack.constant("published_mfu", 0.0) else runs
    switches = [name for on, name in ((scenario.compiled, "torch.compile"), (scenario.float8, "Float8 linears"),
                                      (scenario.async_tp, "AsyncTP")) if on]
    how = f" with {', '.join(switches)}" if switches and stack.constant("mfu_typical", 0.0) else ""
    return f"{mfu[0]:.0%} MFU {scenario.train_precision}{how} ({label})"


def assumed_utilisation(scenario: Scenario, gpu: Gpu) -> str | None:
    """The share of the dense peak a fine-tuning step-model time assumed, when no published run on this GPU fitted it
    (speed.toml [utilisation_fitted]): "0.47/25.5" (utilisation / the peak TFLOPS it multiplies), for the answer to
    say; None where the class's figure was fitted on runs of this very GPU, or the time is a published MFU's."""
    if published_mfu(scenario, gpu) is not None:
        return None
    if gpu.name in hardware.calibration()["utilisation_fitted"]["gpus"]:
        return None
    return f"{utilisation(scenario, gpu)[0]:g}/{peak_flops(scenario, gpu) / 1e12:g}"


def step_model_stack(scenario: Scenario) -> str:
    """The stack and precision a fine-tuning step-model time is for, for the answer to say ("Hugging Face + TRL,
    bf16"; "…, 4-bit base, fp16" on a GPU without bf16): the utilisation it runs at is fitted on such runs
    (engine/catalog/speed.toml), so another stack or precision would take another time."""
    half = scenario.half_dtype if scenario.mixed_precision == "amp" or scenario.bits >= 16 else "bf16"
    base = f"{scenario.bits}-bit base, " if scenario.method == "qlora" else ""
    return f"{profile(scenario.framework).label}, {base}{half}"


def utilisation(scenario: Scenario, gpu: Gpu) -> tuple[float, float, float]:
    """Utilisation of the dense BF16 peak by the matmuls (typical, low, high) on this GPU. The same for every
    method: LoRA runs the base model's matmuls (4 · P instead of 6 · P); what its adapters add is a separate
    memory-bound term. Timed at a published MFU (published_mfu): that MFU."""
    mfu = published_mfu(scenario, gpu)
    if mfu is not None:
        return mfu
    cal = hardware.calibration()
    band = by_class(cal["utilisation"], gpu)
    factor = float(cal["gpu_factor"].get(gpu.name, 1.0))
    return band["typical"] * factor, band["low"] * factor, band["high"] * factor
