"""Request → Scenario: fill every default the user did not state, and say which ones were used.

The defaults are what a typical team runs today (Hugging Face Trainer + PEFT, FlashAttention/SDPA,
gradient checkpointing on for parameter-efficient recipes as TRL, Axolotl and Unsloth ship them).
Each default used becomes an assumption (key and value) that the answer shows. Without a named
framework the stack is plain Hugging Face + TRL (engine/frameworks/trl.toml): Scenario.framework_assumed
says so, for the answer to show (with engine.memory.fused_loss_alternative: what a fused loss would
change). `for_gpu` adapts a scenario to the hardware it runs on (no bf16, no FlashAttention-2, Apple's
unified memory, the card's usable memory), and `build_scenario` applies it when the request names one
kind of GPU.
"""

from __future__ import annotations

from typing import TypeVar

from engine.catalog import (
    Gpu,
    architecture,
    find_gpu,
    find_model,
    reference_of,
    unified_memory,
    usable_memory_gib,
)
from engine.frameworks import DEFAULT as DEFAULT_FRAMEWORK
from engine.frameworks import megatron_core, profile
from engine.memory.constants import constants
from engine.schema import Architecture, Assumption, Method, Request, Scenario, Sharding

T = TypeVar("T")

DEFAULT_METHOD: Method = "lora"
DEFAULT_SEQ_LEN = {"full": 2048, "lora": 2048, "qlora": 2048, "inference": 4096}
DEFAULT_LORA_RANK = 16
DEFAULT_LORA_TARGETS = "all_linear"
DEFAULT_BITS = {"full": 16, "lora": 16, "qlora": 4, "inference": 16}


class ScenarioError(ValueError):
    """The request cannot be estimated. The message says why in English (CLI JSON `error`); `key` and `params` say
    it for the views to word (engine.answer's "no_estimate" note carries them)."""

    def __init__(self, message: str, key: str = "", **params: object) -> None:
        super().__init__(message)
        self.key = key
        self.params = params


def gpu_count(request: Request) -> int:
    """The GPUs of the job: the largest count named (a comparison names several single GPUs)."""
    return max((g.count for g in request.gpus), default=1)


def stack_of(request: Request) -> str:
    """The training stack whose profile the job runs on: the one named, else the default. DeepSpeed named with
    sequence parallelism, activation-checkpoint offload or TiledMLP is ArcticTraining, the trainer of DeepSpeed's ALST
    (engine/frameworks/arctictraining.toml): those are its switches, not the HF Trainer's over a ds_config."""
    framework = request.framework or DEFAULT_FRAMEWORK
    if framework == "deepspeed" and ((request.context_parallel or 1) > 1 or request.activation_offload
                                     or request.tiled_mlp):
        return "arctictraining"
    return framework


def build_scenario(request: Request, count: int | None = None) -> Scenario:
    assumptions: list[Assumption] = []

    def pick(key: str, said: T | None, fallback: T) -> T:
        """What the user said, else the default, which then becomes an assumption."""
        if said is not None:
            return said
        shown = ("on" if fallback else "off") if isinstance(fallback, bool) else fallback
        assumptions.append(Assumption(key=key, value=shown))
        return fallback

    arch = model_architecture(request)
    if not arch.known:
        assumptions.append(Assumption(key="architecture", value=reference_of(arch)))

    pretraining = bool(request.pretraining) or request.stage == "pretrain"
    method: Method = pick("method", request.method, "full" if pretraining else DEFAULT_METHOD)
    training = method != "inference"
    peft = method in ("lora", "qlora")
    bits = pick("bits", request.bits, DEFAULT_BITS[method])
    if method == "qlora" and bits not in (4, 8):
        bits = 4
    n = count or gpu_count(request)
    sharding: Sharding = "none"
    if request.sharding is not None:
        sharding = request.sharding
    elif training and profile(stack_of(request)).constant("zero3_always", 0.0):
        sharding = pick("sharding", None, "zero3")  # a stack whose recipes run ZeRO-3 even on one GPU (profile)
    elif n > 1 and training:
        # a stack that always trains on Megatron-Core (NeMo) runs Megatron's data parallelism with its distributed
        # optimizer, never ZeRO-3 (engine/memory/state.py distributed_optimizer)
        # optimizer, never ZeRO-3 (engine/memory/state.py distributed_optimizer); a PyTorch-native stack (torchtitan)
        # shards with FSDP2 (torchtitan 9dec370ad parallelize_llama.py apply_fsdp)
        stack = profile(stack_of(request))
        on_mcore = bool(stack.constant("megatron_core", 0.0))
        native = bool(stack.constant("pytorch_native", 0.0))
        sharding = pick("sharding", None, "fsdp" if native else "zero3" if method == "full" and not on_mcore
                        else "ddp")

    if (request.expert_parallel or 1) > n:
        raise ScenarioError(f"expert parallel degree {request.expert_parallel} needs at least as many GPUs, {n} given",
                            "ep_needs_gpus", ep=request.expert_parallel, gpus=n)
    framework = stack_of(request)
    prof = profile(framework)
    family = _model_family(request)
    kernel = _loss_kernel(request, framework, family)
    if training and request.fused_loss is None:
        assumptions.append(Assumption(key="fused_loss", value="on" if kernel in FUSED_OR_CHUNKED else "off"))
    precision_default = prof.default_mixed_precision if request.framework else "amp"
    scenario = Scenario(
        arch=arch, method=method, bits=bits,
        optimizer=pick("optimizer", request.optimizer, "paged_adamw" if method == "qlora" else "adamw")
        if training else None,
        mixed_precision=pick("mixed_precision", request.mixed_precision, precision_default)
        if training else "amp",
        lora_rank=pick("lora_rank", request.lora_rank, DEFAULT_LORA_RANK) if peft else 0,
        lora_targets=pick("lora_targets", request.lora_targets, DEFAULT_LORA_TARGETS) if peft else "",
        seq_len=pick("seq_len", request.seq_len, DEFAULT_SEQ_LEN[method]),
        batch_size=pick("batch_size", request.batch_size, 1),
        gradient_checkpointing=pick("gradient_checkpointing", request.gradient_checkpointing, True)
        if training else False,
        flash_attention=pick("flash_attention", request.flash_attention, True),
        fused_loss=training and kernel in FUSED_OR_CHUNKED,
        sharding=sharding, offload=bool(request.offload), gpu_count=n, assumptions=assumptions,
        framework=framework, framework_assumed=request.framework is None, model_family=family,
        loss_kernel=kernel if training else "",
        expert_parallel=request.expert_parallel or 1, pretraining=pretraining and training,
        train_precision="fp8" if (training and (request.quantization == "fp8" or request.float8)
                                  and prof.constant("published_mfu", 0.0) and megatron_core(framework)) else "bf16",
        **native_switches(request, training, megatron_core(framework), assumptions),
        weight_bpw=exl2_bpw(request.quantization) if method == "inference" else None,
    )
    if training and (scenario.pretraining or prof.constant("published_mfu", 0.0)):
        # the time comes from a published MFU (engine/speed/training.py); for_gpu says which for the GPU it runs on
        scenario.assumptions.append(Assumption(key="training_speed",
                                               value=f"published MFU {scenario.train_precision} ({prof.label})"))
    if training and request.examples and not request.tokens:  # training_tokens: each example at the whole context
        scenario.assumptions.append(Assumption(key="example_tokens", value=scenario.seq_len))
    return on_hardware(scenario, request)


def native_switches(request: Request, training: bool, megatron: bool,
                    assumptions: list[Assumption]) -> dict[str, bool]:
    """CONTRACT v2.1's PyTorch-native switches as the scenario carries them (docs/contract-training.md).

    Float8 under NeMo/Megatron is Transformer Engine FP8 (train_precision "fp8"), not torchao's Float8Linear.
    Asynchronous TP needs tensor parallelism and torch.compile: torchtitan 9dec370ad
    torchtitan/parallelisms/parallelize_llama.py parallelize_llama raises "Async TP requires --training.compile", so
    asking for it compiles the blocks (said as an assumption); without TP there is nothing to overlap."""
    if not training:
        return {}
    tp = (request.tensor_parallel or 1) > 1
    async_tp = bool(request.async_tp) and tp
    compiled = bool(request.torch_compile)
    if async_tp and request.torch_compile is None:
        compiled = True
        assumptions.append(Assumption(key="torch_compile", value="on"))
    elif async_tp and request.torch_compile is False:
        async_tp = False  # eager blocks cannot run it: the TP collectives stay as they are
        assumptions.append(Assumption(key="async_tp", value="off"))
    return {"selective_checkpointing": bool(request.selective_checkpointing),
            "float8": bool(request.float8) and not megatron, "async_tp": async_tp, "compiled": compiled}


def model_architecture(request: Request) -> Architecture:
    """The architecture of the request's model; ScenarioError when it names no size and no known model."""
    if request.model is None or (request.model.params_b is None and request.model.config is None
                                 and not request.model.name):
        raise ScenarioError("no model size: say e.g. '7B' or a model name", "no_model_size")
    try:
        return architecture(request.model)
    except ValueError as exc:
        raise ScenarioError(f"unknown model {request.model.name!r} and no size given", "unknown_model",
                            model=request.model.name or "") from exc


def _loss_kernel(request: Request, framework: str, family: str) -> str:
    # Megatron-Core (NeMo, Megatron-SWIFT: the stacks with tensor parallelism) fuses the vocab-parallel cross-entropy
    # over logits it still materialises (megatron/core/fusions/fused_cross_entropy.py
    # fused_vocab_parallel_cross_entropy takes vocab_parallel_logits): its "fused" is the chunked reading, not Liger's
    megatron = megatron_core(framework, request.tensor_parallel or 1, request.pipeline_parallel or 1,
                             request.sharding)
    return loss_kernel(framework, family, fused_by_release(request, framework), materialised=megatron)


def fused_by_release(request: Request, framework: str) -> bool | None:
    """The request's fused_loss, or on where the release of the stack it names computes the trainer's loss without
    the whole logits (profile [versions] fused_loss_<stage>: TRL's chunked_nll SFT loss, its fused LM head)."""
    if request.fused_loss is not None or request.framework is None:
        return request.fused_loss
    rule = f"fused_loss_{request.stage or 'sft'}"
    return True if profile(framework).since(rule, request.framework_version) else None


def on_hardware(scenario: Scenario, request: Request) -> Scenario:
    """The scenario on the GPU the request names (its capacity and what it cannot run), or on a bare memory size."""
    hardware = request_gpu(request)
    if hardware is not None:
        return for_gpu(scenario, hardware, said=request)
    sizes = {ref.memory_gb for ref in request.gpus if ref.memory_gb}
    if len(sizes) == 1 and not any(ref.name for ref in request.gpus):
        scenario = scenario.model_copy(update={"capacity_gib": usable_memory_gib(None, sizes.pop())})
    return scenario


FUSED_OR_CHUNKED = ("chunked", "fused_linear", "unsloth")


def _model_family(request: Request) -> str:
    entry = find_model(request.model.name if request.model else None)
    return entry.arch_family if entry else ""


def loss_kernel(framework: str, family: str, fused: bool | None, materialised: bool = False) -> str:
    """The loss kernel the scenario runs: the stack's, unless the request says fused (or not).

    fused=True on a stack whose loss is plain cross-entropy means a fused linear cross-entropy: what the
    switches people set run (transformers `use_liger_kernel` patches the causal-LM forward with Liger's
    LigerForCausalLMLoss → liger_kernel/ops/fused_linear_cross_entropy.py, which walks the rows in chunks and
    writes the input gradient in the forward: no whole logits, no fp32 copy; axolotl/Unsloth cut_cross_entropy:
    apple/ml-cross-entropy cut_cross_entropy/linear_cross_entropy.py computes the loss blockwise from the
    embeddings and the classifier, the logits never in global memory); `materialised` (a job on Megatron-Core) runs
    its vocab-parallel cross-entropy whatever the flag says (memory.toml [loss] megatron: the fused kernel of
    cross_entropy_loss_fusion works on the same materialised logits);
    fused=False on a chunked/fused stack means the plain transformers loss. Model code that computes
    cross-entropy on 16-bit logits (memory.toml [loss.model_code]) replaces the transformers kernels.
    """
    if materialised:
        return "megatron"
    kernel = profile(framework).loss_kernel
    if fused is True and kernel not in FUSED_OR_CHUNKED:
        kernel = "fused_linear"
    elif fused is False and kernel in FUSED_OR_CHUNKED:
        kernel = "hf"
    if kernel in ("hf", "hf_legacy") and family in constants()["loss"]["model_code"]["bf16_families"]:
        kernel = "bf16"
    return kernel


def request_gpu(request: Request) -> Gpu | None:
    """The one kind of GPU the request runs on (None when it names none, or several kinds)."""
    found = {find_gpu(ref.name, ref.memory_gb) for ref in request.gpus if ref.name}
    if len(found) != 1:
        return None
    gpu = found.pop()
    return gpu


def for_gpu(s: Scenario, gpu: Gpu, said: Request | None = None) -> Scenario:
    """The scenario as it runs on `gpu` (a catalog Gpu): what the hardware cannot do is replaced and said.

    - no bf16 (T4, V100: compute capability < 8.0; M1): fp16 autocast over fp32 trainable weights with a loss
      scaler, in place of bf16 AMP or pure bf16 ("mixed_precision=fp16_amp" assumption). Memory: fp16 and bf16 are
      both 2 bytes; the trainable weights must be fp32 because torch's GradScaler refuses fp16 gradients
      (torch/amp/grad_scaler.py `_unscale_grads_`: "Attempting to unscale FP16 gradients."), which is what "amp"
      already counts (PEFT keeps adapters in fp32: peft/tuners/tuners_utils.py `_cast_adapter_dtype`); the scaler
      (accelerate/accelerator.py: a GradScaler when mixed_precision == "fp16") holds a few scalars per device;
    - no FlashAttention-2 ("flash_attention=off" assumption): Scenario.attention "sdpa" on CUDA/ROCm
      (PyTorch SDPA's memory-efficient kernel: linear memory), "eager" on Apple MPS (the s² softmax is
      stored: PyTorch's MPS SDPA falls back to the math path for training);
    - Apple Silicon: platform "mps" (no CUDA context line);
    - capacity_gib: the GPU's usable memory, so that the allocator's cache is bounded by it.
    Planners call this for each candidate GPU (build_scenario already does for the request's own GPU).
    """
    update: dict[str, object] = {"capacity_gib": usable_memory_gib(gpu)}
    notes: list[Assumption] = []
    platform = "mps" if unified_memory(gpu) else ("rocm" if gpu.rocm_arch else "cuda")
    update["platform"] = platform
    if not gpu.bf16 and s.method != "inference":
        # fp16 autocast with fp32 trainable weights and a loss scaler: the same bytes as bf16 AMP (see half_dtype)
        update["mixed_precision"] = "amp"
        update["half_dtype"] = "fp16"
        notes.append(Assumption(key="mixed_precision", value="fp16_amp"))
    if not gpu.flash_attention_2 and s.flash_attention:
        kind = "eager" if platform == "mps" else "sdpa"
        update["attention"] = kind
        update["flash_attention"] = False
        notes.append(Assumption(key="flash_attention", value="off"))
    if s.float8 and not gpu.fp8_tflops:
        # torchtitan 9dec370ad torchtitan/float8.py Float8Handler: "Failed to swap to Float8Linear because float8 is
        # only supported on SM89 or later": the linears stay bf16
        update["float8"] = False
        notes.append(Assumption(key="float8", value="off"))
    if s.train_precision == "fp8" and not gpu.fp8_tflops:
        update["train_precision"] = "bf16"  # no FP8 tensor cores: Transformer Engine runs the bf16 recipe
        notes.append(Assumption(key="train_precision", value="bf16"))
    adapted = s.model_copy(update=update)
    if adapted.method != "inference":
        from engine.speed.flops import assumed_speed, assumed_utilisation, step_model_stack  # the time model reads it

        speed = assumed_speed(adapted, gpu)
        if speed is not None:  # timed at a published MFU: the answer says which and for which stack
            notes.append(Assumption(key="training_speed", value=speed))
        else:  # the fine-tuning step model: the answer says which stack and precision its time is for
            notes.append(Assumption(key="training_time_stack", value=step_model_stack(adapted)))
            share = assumed_utilisation(adapted, gpu)
            if share is not None:  # no run measured on this card: the utilisation of its class, said
                notes.append(Assumption(key="training_utilisation", value=share))
    return s.model_copy(update={**update, "assumptions": replaced(s.assumptions, notes)})


def replaced(assumptions: list[Assumption], new: list[Assumption]) -> list[Assumption]:
    """The assumptions with each of `new` in place of an earlier one of the same key (one line per default: the
    hardware's replacement, never "FlashAttention on" next to "FlashAttention off")."""
    keys = {a.key for a in new}
    return [*(a for a in assumptions if a.key not in keys), *new]


# stacks whose 4-bit base does not need bitsandbytes (torchtune: torchao NF4Tensor, plain PyTorch ops)
NO_BITSANDBYTES_QLORA = ("torchtune",)


def hardware_conflicts(s: Scenario, gpu: Gpu, said: Request | None = None) -> list[str]:
    """What the scenario asks that `gpu` cannot run, as message keys (empty when it can run as is).

    - "qlora_needs_bitsandbytes": a 4/8-bit base through bitsandbytes where bitsandbytes has no backend
      (Apple Silicon; catalog `bitsandbytes`), unless the stack quantizes without it (torchtune);
    - "flash_attention_unsupported": the request asked for FlashAttention where no memory-efficient attention kernel
      trains (Apple MPS: PyTorch's SDPA takes the math path). CONTRACT.md's `flash_attention` covers PyTorch SDPA,
      whose memory-efficient kernel (torch/nn/attention: SDPBackend.EFFICIENT_ATTENTION, xFormers' cutlass kernel,
      sm50+) runs on T4 and V100 without FlashAttention-2: there for_gpu counts SDPA (no s² matrix), not a conflict;
    - "bf16_unsupported": the request asked for pure bf16 on a GPU without bf16 (T4, V100, M1).
    for_gpu replaces what was only a default; these are what the user said, for the answer to say.
    """
    out = []
    quantized_training = s.method == "qlora" or (s.method != "inference" and s.bits < 16)
    if quantized_training and not gpu.bitsandbytes and s.framework not in NO_BITSANDBYTES_QLORA:
        out.append("qlora_needs_bitsandbytes")
    if said is not None and said.flash_attention and not gpu.flash_attention_2 and unified_memory(gpu):
        out.append("flash_attention_unsupported")
    if said is not None and said.mixed_precision == "pure_bf16" and not gpu.bf16:
        out.append("bf16_unsupported")
    return out


def training_tokens(request: Request, seq_len: int, sequences_per_example: int = 1) -> float | None:
    """The tokens the job trains on, epochs counted: the amount said, or a count of examples (Request.examples) each
    at the whole context (`seq_len` tokens per sequence, `sequences_per_example` sequences: a preference pair is two,
    a GRPO prompt its generations). The whole context is the upper bound of an example, said as the assumption
    example_tokens: a shorter example costs less (HF Trainer at micro-batch 1 trains on its own tokens)."""
    if request.tokens:
        tokens = request.tokens
    elif request.examples:
        tokens = request.examples * seq_len * sequences_per_example
    else:
        return None
    return tokens * (request.epochs or 1)


def exl2_bpw(quantization: str | None) -> float | None:
    """"exl2:6.5" (engine.parse: "exl2 6.5bpw"): the bits per weight of ExLlamaV2's EXL2 decoder linears."""
    if not quantization or not quantization.startswith("exl2:"):
        return None
    try:
        bpw = float(quantization.split(":", 1)[1])
    except ValueError:
        return None
    return bpw if 1.0 <= bpw <= 16.0 else None
