"""The engine's keys in words: components, techniques, notes, assumptions, changes, methods, GPU names."""

from __future__ import annotations

import re
from typing import Any

from bot.views.catalogs import N_, _, _n
from bot.views.formats import context_text, gb, gpus_text, num, number_or_text, pct, tokens_amount, with_unit
from engine.schema import Assumption, Change, Note, Scenario

COMPONENTS = ("weights", "gathered", "autocast", "upcast", "adapters", "gradients", "optimizer", "step_buffers",
              "activations", "logits", "kv_cache", "shape_margin", "overhead", "freed_before_peak", "cuda_context")


def component_label(lang: str, key: str) -> str:
    labels = {
        "weights": _(lang, "weights"), "adapters": _(lang, "adapters"), "gradients": _(lang, "gradients"),
        "optimizer": _(lang, "optimizer"), "activations": _(lang, "activations"), "logits": _(lang, "logits"),
        "kv_cache": _(lang, "KV cache"), "overhead": _(lang, "PyTorch reserve"),
        "cuda_context": _(lang, "CUDA context"), "shape_margin": _(lang, "architecture margin"),
        "upcast": _(lang, "fp32 layer copies"), "gathered": _(lang, "gathered layers"),
        "autocast": _(lang, "autocast copies"), "step_buffers": _(lang, "optimizer step buffers"),
        "freed_before_peak": _(lang, "freed before the peak"),
    }
    return labels[key]


def technique_label(lang: str, key: str) -> str:
    labels = {"gradient_checkpointing": "gradient checkpointing", "micro_batch_1": _(lang, "micro-batch 1"),
              "fused_loss": FUSED_LOSS,
              "optimizer_8bit": "8-bit Adam", "optimizer_fused": "fused AdamW", "zero3": "ZeRO-3",
              "cpu_offload": _(lang, "CPU offload")}
    if key.startswith("cp:"):  # engine.posttrain.search: context parallelism "cp:<degree>:<ulysses|ring>"
        _cp, degree, kind = [*key.split(":"), "", ""][:3]
        return _(lang, "context parallel ×%(d)s (%(kind)s)") % {
            "d": degree, "kind": "Ulysses" if kind == "ulysses" else _(lang, "ring attention")}
    return labels.get(key, key)


FUSED_LOSS = "fused cross-entropy (Liger / Unsloth)"  # the kernels people know it by, in both languages
BARE_GPU = re.compile(r"(\d+(?:\.\d+)?) GB GPU")


def gpu_name(lang: str, name: str) -> str:
    """A catalog name as it is; a GPU known only by its memory ("24 GB GPU") worded in the reader's language."""
    bare = BARE_GPU.fullmatch(name)
    return _(lang, "%(gb)s GPU") % {"gb": gb(lang, float(bare.group(1)))} if bare else name


NOTE_TEXTS = {
    "model size out of range": N_("model size out of range: ignored"),
    "context length out of range": N_("context length out of range: the default %(seq_len)s is used"),
    "batch size out of range": N_("batch size out of range: the default %(batch_size)s is used"),
    "LoRA rank out of range": N_("LoRA rank out of range: the default %(lora_rank)s is used"),
    "epochs out of range": N_("number of epochs out of range: ignored"),
    "amount of data out of range": N_("amount of data out of range: ignored"),
    "GPU memory out of range": N_("GPU memory out of range: ignored"),
    "GPU count out of range": N_("GPU count out of range (1–100 000): one GPU is used"),
    "GPU count not read": N_("a bare number over 1024 before a GPU is not read as a count: one GPU is used "
                             "(write it as 2048×H100)"),
    "too long": N_("the message is too long: only its beginning was read"),
    "negative number": N_("a negative number is neither a size nor a count: ignored"),
    "too many GPUs": N_("more than 8 GPUs named: only the first 8 are compared"),
    "budget out of range": N_("budget out of range: ignored"),
    "deadline out of range": N_("deadline out of range: ignored"),
    "concurrency out of range": N_("number of concurrent users out of range: ignored"),
    "prompt len out of range": N_("prompt length out of range: ignored"),
    "output len out of range": N_("output length out of range: ignored"),
    "num_generations out of range": N_("number of generations out of range: ignored"),
    "parallelism out of range": N_("parallelism degree out of range (1–1024): ignored"),
}

# engine.scenario.ScenarioError keys (the "no_estimate" error's `why`): why no estimate could be made
NO_ESTIMATE_TEXTS = {
    "unknown_model": N_("%(model)s is not in the catalog and the question gives no size: add one, e.g. “%(model)s "
                        "7B”."),
    "stage_is_training": N_("%(stage)s is a training stage: choose full fine-tuning, LoRA or QLoRA."),
    "cp_needs_gpus": N_("Context parallel ×%(cp)s needs at least %(cp)s GPUs, and the question gives %(gpus)s."),
    "ulysses_heads": N_("Ulysses over %(cp)s GPUs needs the %(heads)s attention heads to divide by %(cp)s: use ring "
                        "attention or another degree."),
    "sequence_under_cp": N_("The sequence is shorter than the context parallel degree."),
    "tp_heads": N_("Tensor parallel ×%(tp)s needs the %(heads)s attention heads to divide by it."),
    "ep_needs_gpus": N_("Expert parallel ×%(ep)s needs at least %(ep)s GPUs, and the question gives %(gpus)s."),
    "cp_tp_needs_gpus": N_("Context parallel ×%(cp)s with tensor parallel ×%(tp)s needs %(needs)s GPUs, and the "
                           "question gives %(gpus)s."),
    "pp_needs_gpus": N_("Pipeline parallel ×%(pp)s with tensor parallel ×%(tp)s and context parallel ×%(cp)s needs "
                        "%(needs)s GPUs, and the question gives %(gpus)s."),
}


def error_lines(lang: str, errors: list[Note]) -> list[str]:
    """Why a question got no estimate, one line each (engine.answer: "request_error" keys of the parser, the
    "no_estimate" reason's key); empty when only the model size is missing (the usual hint says that)."""
    out = []
    for n in errors:
        if n.key == "request_error":
            text = NOTE_TEXTS.get(str(n.params.get("reason", "")))
            if text is not None and "%(" not in text:
                out.append(_(lang, text))
        elif n.key == "no_estimate":
            text = NO_ESTIMATE_TEXTS.get(str(n.params.get("why", "")))
            if text is not None:
                out.append(_(lang, text) % n.params)
    return out


UNSUPPORTED_TEXTS = {  # what a question asked that the engine does not model yet, and what is answered instead
    "tpu": N_("TPUs are not modelled yet: the answer is for GPUs"),
    "cpu_only": N_("running without a GPU is not modelled yet: the answer is for GPUs"),
    "apple": N_("Apple silicon is not modelled yet: the answer is for NVIDIA GPUs"),
    "vision": N_("image inputs are not counted yet: the estimate is for text only"),
    "audio": N_("audio inputs are not counted yet: the estimate is for text only"),
    "diffusion": N_("diffusion models are not modelled: the estimate is for a language model"),
    "mixed_gpus": N_("a mix of GPUs in one job is counted as the weakest of them for all: each card holds the same "
                     "share and waits for the slowest"),
    "disk": N_("disk space for checkpoints is not estimated yet: only GPU memory is"),
    "distillation": N_("distillation is not modelled yet: the student alone is estimated, without the teacher"),
    "lmdeploy": N_("LMDeploy is not modelled yet: the estimate is not specific to it"),
    "exllama": N_("ExLlamaV2 (TabbyAPI) is not modelled as an engine: the EXL2 weights are counted at the bits per "
                  "weight said (the head at 6 bits, the embeddings in CPU RAM), the KV cache and the rest as in "
                  "plain PyTorch; its speed is not estimated"),
    "mlx": N_("MLX is not modelled as such: counted as the same weights and bits in the Mac's unified memory "
              "(MLX runs on Apple Silicon only)"),
    "mlc": N_("MLC LLM is not modelled yet: the estimate is not specific to it"),
}


def note_text(lang: str, n: Note, scenario: Scenario) -> str:
    params = {"seq_len": context_text(lang, scenario.seq_len), "batch_size": scenario.batch_size,
              "lora_rank": scenario.lora_rank}
    said = said_note_text(lang, n)
    if said is not None:
        return said
    return _other_note_text(lang, n, params)


def said_note_text(lang: str, n: Note) -> str | None:
    """What the question asked that is not modelled, or what was assumed for it (engine.answer.said_notes)."""
    if n.key == "unsupported":
        what = str(n.params.get("what", ""))
        text = UNSUPPORTED_TEXTS.get(what)
        return _(lang, text) if text else _(lang, "%(what)s is not modelled yet") % {"what": what}
    if n.key == "unpriced_currency":
        return _(lang, "there are no prices in %(asked)s: the answer is in %(shown)s") % {
            "asked": n.params.get("asked", ""), "shown": n.params.get("shown", "")}
    if n.key == "assumed_model":
        return _(lang, "estimated for %(model)s, the family's usual model") % {"model": n.params.get("model", "")}
    if n.key == "assumed_inference":
        return _(lang, "no training named: answered as running the model; say LoRA, QLoRA or full fine-tuning for a "
                       "training estimate")
    if n.key == "assumed_gpu":
        return _(lang, "no GPU named: estimated for %(gpu)s, the service's usual one") % {
            "gpu": n.params.get("gpu", "")}
    return None


def _other_note_text(lang: str, n: Note, params: dict[str, Any]) -> str:
    if n.key == "unknown_gpu" and n.params.get("others"):
        return _(lang, "%(name)s is not in the catalog: left out") % {"name": n.params.get("name", "")}
    if n.key == "unknown_gpu":
        return _(lang, "%(name)s is not in the catalog: all GPUs are compared instead") % {
            "name": n.params.get("name", "")}
    if n.key == "price":
        return _(lang, "your price %(value)s for %(gpu)s is not usable: market prices are used") % {
            "value": number_or_text(lang, n.params.get("value")), "gpu": n.params.get("gpu")}
    if n.key == "rate":
        return _(lang, "the rouble rate %(value)s is not usable: the Bank of Russia rate is used") % {
            "value": number_or_text(lang, n.params.get("value"))}
    text = NOTE_TEXTS.get(n.key)
    return _(lang, text) % params if text else n.key


OPTIMIZER_NAMES = {"adamw": "AdamW", "adamw_fused": "fused AdamW", "paged_adamw": "paged AdamW",
                   "adamw_8bit": "8-bit AdamW", "paged_adamw_8bit": "paged 8-bit AdamW", "sgd": "SGD",
                   "adafactor": "Adafactor", "lion": "Lion"}
SWITCHES = {"gradient_checkpointing": (N_("gradient checkpointing on"), N_("gradient checkpointing off")),
            "flash_attention": (N_("FlashAttention on"), N_("FlashAttention off")),
            "fused_loss": (N_("fused cross-entropy on"), N_("fused cross-entropy off")),
            # CONTRACT v2.1 native switches the engine turns on or off itself (engine/scenario.py native_switches)
            "torch_compile": (N_("torch.compile on: AsyncTP needs it"), N_("torch.compile off")),
            "async_tp": (N_("AsyncTP on"), N_("AsyncTP off: it needs torch.compile")),
            "float8": (N_("Float8 linears on"), N_("Float8 linears off: the GPU has no FP8 tensor cores"))}


def assumption_text(lang: str, item: Assumption) -> str:
    """One default the answer relied on, worded in the reader's language."""
    key, value = item.key, item.value
    if key in SWITCHES:
        message = SWITCHES[key][0 if value == "on" else 1]
        return _(lang, message)
    match key:
        case "architecture":
            like = _(lang, "like")
            return _(lang, "architecture %(v)s") % {"v": f"{like} {value}"}
        case "method":
            names = {"full": _(lang, "full fine-tuning"), "inference": _(lang, "inference"), "lora": "LoRA",
                     "qlora": "QLoRA"}
            return _(lang, "method %(v)s") % {"v": names.get(str(value), value)}
        case "bits":
            return _(lang, "%(v)s-bit weights") % {"v": value}
        case "optimizer":
            return _(lang, "optimizer %(v)s") % {"v": OPTIMIZER_NAMES.get(str(value), value)}
        case "mixed_precision" if value == "fp16_amp":
            return _(lang, "fp16 mixed precision with fp32 master weights and loss scaling (the GPU has no bf16)")
        case "mixed_precision":
            return _(lang, "bf16 mixed precision with fp32 master weights") if value == "amp" else _(lang, "pure bf16")
        case "quantization":
            return _(lang, "weights in %(v)s") % {"v": str(value).removeprefix("gguf:").upper()}
        case "context_parallel":
            return _(lang, "context parallel ×%(v)s over all GPUs of the job") % {"v": value}
        case "alst_recipe":
            switches = {"full": _(lang, "full fine-tuning"),
                        "activation_offload": _(lang, "activation checkpoints offloaded to CPU"),
                        "tiled_mlp": "TiledMLP", "fused_loss": _(lang, "Liger's fused loss"),
                        "offload": _(lang, "the optimizer in CPU RAM")}
            said = [switches[name] for name in str(value).split("+") if name in switches]
            return _(lang, "ALST as ArcticTraining's recipes run it: %(switches)s (say any of them to change it)") % {
                "switches": ", ".join(said)}
        case "chinchilla_tokens":
            return _(lang, "compute-optimal data: about 20 tokens a parameter (Chinchilla, Hoffmann et al. 2022), "
                           "%(v)s tokens") % {"v": tokens_amount(lang, float(value))}
        case "deadline_weekday":
            return _(lang, "a deadline by a weekday taken as %(v)s h (I do not count calendar days)") % {
                "v": number_or_text(lang, value)}
        case "moe_active":
            active, _sep, total = str(value).partition("/")
            return _(lang, "a mixture of experts with %(active)sB of its %(total)sB active per token (the median "
                           "share of the catalog's MoE models; say it as 30B-A3B to change it)") % {
                "active": number_or_text(lang, float(active)), "total": number_or_text(lang, float(total))}
        case "deadline_calendar":
            return _(lang, "a deadline by a weekday counted from today: %(v)s h") % {"v": number_or_text(lang, value)}
        case "budget_currency":
            return _(lang, "budget in roubles") if value == "RUB" else _(lang, "budget in dollars")
        case "lora_rank":
            return _(lang, "LoRA rank %(v)s") % {"v": value}
        case "lora_targets":
            return _(lang, "LoRA on all linear layers") if value == "all_linear" else _(lang, "LoRA on %(v)s") % {
                "v": value}
        case "seq_len":
            return _(lang, "context %(v)s") % {"v": context_text(lang, value) if isinstance(value, int) else value}
        case "batch_size":
            return _(lang, "micro-batch %(v)s") % {"v": value}
        case "sharding":
            return _(lang, "%(v)s across the GPUs") % {"v": str(value).upper().replace("ZERO", "ZeRO-")}
        case "training_speed":
            return _(lang, "time from model FLOPs at %(v)s, as published runs reach") % {"v": value}
        case "example_tokens":
            return _(lang, "each example counted at the whole context, %(v)s tokens (an upper bound: say the average "
                           "length, e.g. “of 500 tokens each”)") % {"v": number_or_text(lang, value)}
        case "training_time_stack":
            return _(lang, "time for %(v)s") % {"v": value}
        case "training_utilisation":  # "0.47/25.5": the class's utilisation and the card's dense peak
            share, _sep, peak = str(value).partition("/")
            return _(lang, "matmuls at %(pct)s of the card's %(peak)s dense peak: the utilisation assumed for its "
                           "class of GPU, no fine-tuning run on it is measured") % {
                "pct": pct(lang, round(float(share) * 100)), "peak": with_unit(num(lang, float(peak)), "TFLOPS")}
    return str(item)


def tight_suffix(lang: str, fix: Change | None) -> str:
    """A fix that leaves under a tenth of the memory free says so in the headline (engine Change.tight)."""
    if fix is None or not fix.tight:
        return ""
    return "; " + _(lang, "after the change it is tight: under a tenth of the memory left")


def change_text(lang: str, key: str, p: dict[str, Any], inference: bool) -> str:
    match key:
        case "gradient_checkpointing":
            return _(lang, "gradient checkpointing")
        case "optimizer_8bit":
            return _(lang, "8-bit optimizer")
        case "optimizer_fused":
            return _(lang, "fused AdamW (optim=adamw_torch_fused, the step without temporaries)")
        case "fused_loss":
            return FUSED_LOSS
        case "cpu_offload" if p.get("params"):
            return _(lang, "CPU offload of the parameters and the optimizer state")
        case "cpu_offload" if p.get("recipe") == "fsdp_qlora":
            return _(lang, "the FSDP-QLoRA recipe (Answer.AI fsdp_qlora) with its CPU offload of the frozen weights "
                           "(--use_cpu_offload)")
        case "cpu_offload" if p.get("what") == "weights":
            return _(lang, "CPU offload of the frozen weights (FSDP offload_params, the recipe's --use_cpu_offload)")
        case "cpu_offload":
            return _(lang, "CPU offload of the optimizer state")
        case "mlx":
            return _(lang, "MLX instead of bitsandbytes (mlx-lm LoRA on a 4-bit MLX model)")
        case "method" if p.get("bits") == 16:
            return _(lang, "16-bit LoRA, no bitsandbytes (PyTorch)")
        case "method":
            return _(lang, "switch to %(to)s") % {"to": {"lora": "LoRA", "qlora": "QLoRA"}.get(p.get("to", ""), "")}
        case "bits":
            return _(lang, "weights in %(to)s bits") % {"to": p.get("to")}
        case "shorter_context":
            return _(lang, "context %(from)s → %(to)s") % {"from": _context(lang, p.get("from")),
                                                             "to": _context(lang, p.get("to"))}
        case "smaller_batch" if inference:
            return _(lang, "concurrent sequences %(from)s → 1") % {"from": p.get("from")}
        case "smaller_batch":
            return _(lang, "micro-batch %(from)s → 1 with gradient accumulation") % {"from": p.get("from")}
        case "more_gpus" if inference:
            return _(lang, "%(gpus)s, the weights split across them") % {"gpus": _gpus(lang, p.get("count"))}
        case "more_gpus" if p.get("sharding") == "fsdp":
            return _(lang, "%(gpus)s with FSDP") % {"gpus": _gpus(lang, p.get("count"))}
        case "more_gpus":
            return _(lang, "%(gpus)s with ZeRO-3") % {"gpus": _gpus(lang, p.get("count"))}
    return key


def _context(lang: str, value: Any) -> str:
    return context_text(lang, value) if isinstance(value, int) else str(value)


def _gpus(lang: str, value: Any) -> str:
    return gpus_text(lang, value) if isinstance(value, int) else str(value)


def method_label(lang: str, s: Scenario) -> str:
    bits = _n(lang, "%(bits)s-bit", "%(bits)s-bit", s.bits) % {"bits": s.bits}  # "4 бита", "16 бит"
    if s.method == "qlora":
        return f"QLoRA {bits} r{s.lora_rank}"
    if s.method == "lora":
        return f"LoRA r{s.lora_rank}"
    if s.method == "inference" and s.weight_bpw is not None:  # "exl2 6bpw": the bits said, not the nearest 4/8/16
        return _(lang, "inference, EXL2 %(bpw)s bpw") % {"bpw": num(lang, s.weight_bpw)}
    if s.method == "inference":
        return _(lang, "inference, %(bits)s") % {"bits": bits}
    if s.pretraining:
        return _(lang, "pretraining from scratch")
    return _(lang, "full fine-tuning")
