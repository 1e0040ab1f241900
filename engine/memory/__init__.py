"""Scenario → Breakdown: the peak GPU memory of one GPU, by component, in GiB.

The model follows DESIGN.md "The memory model": weights by precision, trainable state by optimizer
and mixed precision (state.py), activations counted tensor by tensor (activations.py), the loss phase
by loss kernel (loss.py), the training peak as phases (training.py), the KV cache and prefill for
inference (inference.py), sharding over N GPUs, offload to CPU RAM, and the allocator's slack as
overhead. The stack's switches come from its framework profile (engine/frameworks/); constants live
in catalog/memory.toml with their sources.

Symbols (DESIGN.md): s sequence length, b micro-batch, h hidden size, f FFN size per projection,
a heads, kv KV heads, d head dim, V vocabulary, L layers, P parameters, N GPUs.
"""

from __future__ import annotations

from engine import work
from engine.catalog import smaller_shapes
from engine.frameworks import profile
from engine.memory.activations import (
    activation_bytes_per_token_layer,
    backward_gradients_per_token,
    checkpointed_inputs,
    mlp_wide_bytes_per_token,
)
from engine.memory.constants import GIB, constants
from engine.memory.inference import inference_peak
from engine.memory.lora import LoraTargets, lora_parameters
from engine.memory.loss import effective_kernel, loss_bytes_per_logit
from engine.memory.state import State, dequantized_weight_bytes, training_state, weight_bytes_per_param
from engine.memory.training import Phases, training_phases
from engine.schema import Breakdown, Scenario

__all__ = [
    "GIB",
    "LoraTargets",
    "activation_bytes_per_token_layer",
    "allocator_slack_fractions",
    "backward_gradients_per_token",
    "breakdown",
    "checkpointed_inputs",
    "constants",
    "dequantized_weight_bytes",
    "effective_kernel",
    "fused_loss_alternative",
    "lora_parameters",
    "lora_targets_of",
    "loss_bytes_per_logit",
    "mlp_wide_bytes_per_token",
    "profile_offloads_checkpoints",
    "weight_bytes_per_param",
    "with_loss_kernel",
]

FUSED_KERNELS = ("fused_linear", "unsloth")


def profile_offloads_checkpoints(s: Scenario) -> bool:
    """Whether the scenario's stack moves the checkpointed layer inputs to CPU RAM (engine/memory/training.py)."""
    prof = profile(s.framework)
    return prof.checkpoint_offload and (s.offload or prof.state_offload)


def lora_targets_of(s: Scenario) -> LoraTargets:
    """The layers whose adapters a LoRA / QLoRA scenario trains (none for other methods)."""
    return LoraTargets.parse(s.lora_targets) if s.method in ("lora", "qlora") else LoraTargets(frozenset())


def _over_capacity(s: Scenario, live: float, cuda_context: float) -> bool:
    """Whether a live set (bytes) is beyond the card's usable memory (none known: never)."""
    return s.capacity_gib is not None and live > (s.capacity_gib - cuda_context) * GIB


def _static(st: State, ph: Phases) -> float:
    """The long-lived part of a training peak: states and gathered units (bytes)."""
    return min(st.weights + st.upcast + st.adapters + st.optimizer + ph.gathered + st.gradients, ph.live)


def allocator_slack_fractions(framework: str | None = None) -> tuple[float, float]:
    """(static, dynamic) fractions of the caching allocator's slack (catalog memory.toml [overhead]).

    A stack that launches with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (profile constant
    expandable_segments: torchtitan 9dec370ad run_llama_train.sh) grows one mapped segment a stream and maps pages
    into it, so freed ranges are reused at any size (c10/cuda/CUDACachingAllocator.cpp ExpandableSegment): what
    stays is the slack of split blocks still in use, fragmentation_floor over every live tensor."""
    o = constants()["overhead"]
    if framework is not None and profile(framework).constant("expandable_segments", 0.0):
        floor = float(o["fragmentation_floor"])
        return floor, floor
    return float(o["fragmentation_static"]), float(o["fragmentation_dynamic"])


def _slack(live: float, static: float, framework: str | None = None) -> float:
    """The caching allocator's slack over a live set (catalog memory.toml [overhead]), bytes."""
    fs, fd = allocator_slack_fractions(framework)
    return float(fs * static + fd * (live - static))


def with_loss_kernel(s: Scenario, kernel: str | None = None) -> Breakdown:
    """The breakdown with the scenario's loss kernel, or with `kernel` instead (e.g. "fused_linear")."""
    work.count()  # the unit of an answer's work (engine.work)
    c = constants()
    prof = profile(s.framework)
    targets = lora_targets_of(s)
    st = training_state(s, targets)
    cuda_context = float(c["overhead"]["cuda_context_gib"]) if s.platform != "mps" else 0.0
    kv_cache = 0.0
    gathered = autocast = step_buffers = 0.0
    cpu = st.cpu
    released = False
    if s.method == "inference":
        inf = inference_peak(s, st)
        kv_cache, activations, logits, static, live = inf.kv_cache, inf.activations, inf.logits, inf.static, inf.live
    else:
        ph = training_phases(s, st, targets, prof, kernel)
        if _over_capacity(s, ph.live, cuda_context):
            # the reserved loss phase does not fit: the caching allocator releases its cached blocks and retries
            # (c10/cuda/CUDACachingAllocator.cpp release_cached_blocks), so only the live loss tensors remain; the
            # activations' split blocks keep their slack (below: no further cap). A run that does not fit even so
            # keeps the reserved figure: on a card large enough for it nothing is released.
            lean = training_phases(s, st, targets, prof, kernel, live_loss=True)
            if not _over_capacity(s, lean.live + _slack(lean.live, _static(st, lean), s.framework), cuda_context):
                ph, released = lean, True
        activations = ph.stored + ph.layer + ph.dequant
        logits = max(ph.loss, ph.held)
        gathered, autocast, step_buffers = ph.gathered, ph.autocast, ph.step_temp
        live = ph.live
        static = _static(st, ph)
        cpu += ph.cpu_extra
    # the allocator's slack is part of the reserved peak; the CUDA context is not (it is outside
    # PyTorch's allocator) and is reported on its own line, added when checking a fit
    overhead = _slack(live, static, s.framework)
    pressure = False
    if s.capacity_gib is not None:
        # near the card's capacity the caching allocator frees its cached blocks and retries before it
        # fails (c10/cuda/CUDACachingAllocator.cpp: release_cached_blocks on a failed cudaMalloc), so the
        # reserved peak stops at the capacity; only the split blocks' slack cannot be given back
        room = (s.capacity_gib - cuda_context) * GIB - live - 2**21  # less one 2 MiB allocator block
        floor = c["overhead"]["fragmentation_floor"] * live
        if floor <= room < overhead and not released:  # a peak that cannot fit even so keeps its full slack
            overhead, pressure = room, True
    return Breakdown(
        weights=st.weights / GIB, adapters=st.adapters / GIB, gradients=st.gradients / GIB,
        optimizer=st.optimizer / GIB, activations=activations / GIB, logits=logits / GIB,
        kv_cache=kv_cache / GIB, overhead=overhead / GIB, total=(live + overhead) / GIB,
        cuda_context=cuda_context, cpu_ram=cpu / GIB, trainable_params=st.trainable, upcast=st.upcast / GIB,
        pressure=pressure, gathered=gathered / GIB, autocast=autocast / GIB, step_buffers=step_buffers / GIB,
    )


def breakdown(s: Scenario) -> Breakdown:
    """Peak memory of the busiest GPU for the scenario.

    A bare size ("5B", arch.known false) takes the largest estimate over its own representative shape and
    the shapes of the smaller sizes' classes at its parameter count (engine.catalog.smaller_shapes), so
    the estimate never falls as the size grows.
    """
    own = with_loss_kernel(s)
    if s.arch.known:
        return own
    top = own.total
    for arch in smaller_shapes(s.arch.params):
        alt = with_loss_kernel(s.model_copy(update={"arch": arch.model_copy(update={"name": s.arch.name})}))
        top = max(top, alt.total)
    if top <= own.total:
        return own
    # the smaller model's own lines (its weights are a smaller model's) would misstate this size's: the
    # lines stay this shape's, the difference is a line of its own
    return own.model_copy(update={"total": top, "shape_margin": top - own.total})


def fused_loss_alternative(s: Scenario) -> Breakdown | None:
    """What a fused linear cross-entropy (Liger, Cut Cross-Entropy, Unsloth's fused loss) would give:
    the same scenario with the logits never materialised. None for inference or when already fused."""
    if s.method == "inference" or effective_kernel(s, profile(s.framework)) in FUSED_KERNELS:
        return None
    return with_loss_kernel(s, "fused_linear")
