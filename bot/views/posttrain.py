"""The post-training parts of an answer in words: the stage's headline, the breakdown with the lines post-training
adds (reference, reward and value models, rollouts, the vLLM share), what to change with the total each gives, the
TRL settings to use, notes, assumptions and the RL step time. engine.posttrain gives numbers and message keys only.
"""

from __future__ import annotations

from typing import Any

from bot.views.catalogs import N_, _, _n
from bot.views.formats import NBSP, context_text, decimal, gb, gpus_text, hours_text, num, pct
from bot.views.view import TABLE_WIDTH, table_row
from bot.views.words import (
    COMPONENTS,
    FUSED_LOSS,
    assumption_text,
    component_label,
    gpu_name,
    method_label,
    technique_label,
    tight_suffix,
)
from engine.answer import PARSED_DEFAULTS
from engine.configs.writers.arctic import deepspeed_lines, trainer_lines
from engine.parts import posttrain_parts
from engine.posttrain import PostTrainResult
from engine.posttrain.setup import constants
from engine.schema import Assumption, PostTrainAnswer

STAGES = {"dpo": "DPO", "orpo": "ORPO", "kto": "KTO", "simpo": "SimPO", "ppo": "PPO", "grpo": "GRPO"}

LINE_LABELS = {
    "reference_model": N_("reference model"),
    "reward_model": N_("reward model"),
    "value_model": N_("value model"),
    "cp_buffers": N_("CP buffers"),
    "generation_kv_cache": N_("rollouts: KV cache"),
    "generation_gathered_weights": N_("rollouts: gathered model"),
    "vllm_share": N_("vLLM share"),
    "vllm_asleep": N_("vLLM asleep"),
}

# chart colours of the lines post-training adds (the policy's lines keep bot/views/chart.py's)
LINE_COLOURS = {"reference_model": "#64B5CD", "reward_model": "#4A9A8A", "value_model": "#A05195",
                "cp_buffers": "#B07AA1", "generation_kv_cache": "#937860", "generation_gathered_weights": "#7F9FCF",
                "vllm_share": "#F1A340", "vllm_asleep": "#FDD49E"}

NOTES = {
    "posttrain.note.activations_largest": N_("activations are the largest line: the sequence is what fills the GPU"),
    "posttrain.note.logits_largest": N_("the logits are the largest line: fused cross-entropy (Liger / Unsloth) "
                                        "or context parallelism divides them"),
    "posttrain.note.generation_peak": N_("the peak comes during generation, not in the training step"),
    "posttrain.note.hf_generate": N_("rollouts with transformers' generate (no vLLM): slower generation; "
                                     "say “with vLLM” to estimate it"),
    "posttrain.note.padding_free_disabled_trl": N_("TRL's DPOTrainer turns padding-free off: padded batches are "
                                                   "estimated"),
    "posttrain.note.padding_free_same_peak": N_("padding-free batches save padding of shorter samples; the peak at "
                                                "max_length is the same"),
    "posttrain.note.server_needs_more_gpus": N_("vLLM in server mode needs GPUs of its own beside the trainer's"),
    "posttrain.note.unsloth_standby": N_("Unsloth shares the weights with vLLM (standby): the share is freed for "
                                         "the training step"),
    "posttrain.note.vllm_does_not_fit_beside_trainer": N_("vLLM's share and the trainer do not fit on one card "
                                                          "together: use sleep mode or a separate GPU for vLLM"),
    "posttrain.note.vllm_share_too_small": N_("vLLM's share is too small for its weights and KV cache: raise "
                                              "vllm_gpu_memory_utilization"),
    "posttrain.note.vllm_batch_queued": N_("vLLM's KV cache holds only part of the generation batch: the rest waits "
                                           "its turn (a slower rollout, counted in the time)"),
}


def tokens_k(lang: str, tokens: int) -> str:
    """1536 → "1.5k" / "1,5k"; 131072 → "128k"; 2600 → "2.5k" (a sequence's length to a tenth of a k)."""
    if tokens < 1000:
        return str(tokens)
    if tokens % 512 == 0 or tokens % 1000 == 0:
        return context_text(lang, tokens)
    if tokens >= 2**20:
        return num(lang, round(tokens / 2**20, 1)) + "M"
    return num(lang, round(tokens / 1024, 1)) + "k"


def stage_label(lang: str, r: PostTrainResult) -> str:
    """"GRPO, 8 generations × 1.5k" / "DPO, LoRA" / "reward model, full" / "context 128k"."""
    method = {"full": _(lang, "full fine-tuning"), "lora": "LoRA", "qlora": "QLoRA"}.get(r.method, r.method)
    if r.stage == "grpo" and r.settings.num_generations:
        n = r.settings.num_generations
        gens = _n(lang, "%(n)s generation", "%(n)s generations", n) % {"n": n}
        return f"GRPO, {gens} × {tokens_k(lang, r.tokens_per_sequence)}"  # 8 generations of 1.5k tokens each
    if r.stage == "rm":
        return _(lang, "reward model, %(method)s") % {"method": method}
    if r.stage in STAGES:
        return f"{STAGES[r.stage]}, {method}"
    return _(lang, "context %(tokens)s, %(method)s") % {"tokens": tokens_k(lang, r.tokens_per_sequence),
                                                          "method": method}


def vllm_share_used(a: PostTrainAnswer) -> float:
    """The gpu_memory_utilization the estimate holds for a colocated vLLM: the one asked, else TRL's default."""
    asked = a.request.rollout.gpu_memory_utilization if a.request.rollout else None
    return float(asked if asked is not None else constants()["defaults"]["vllm_gpu_memory_utilization"])


def rollout_text(lang: str, a: PostTrainAnswer, r: PostTrainResult) -> str:
    st = r.settings
    if st.vllm_mode == "colocate":
        return " " + _(lang, "with vLLM colocated at %(util)s") % {"util": decimal(lang, vllm_share_used(a), 2)}
    if st.vllm_mode == "server":
        n = r.rollout_gpus or 1
        return " " + _n(lang, "with vLLM on %(n)s GPU of its own", "with vLLM on %(n)s GPUs of their own", n) % {
            "n": n}
    return ""


def headline(lang: str, a: PostTrainAnswer, r: PostTrainResult) -> str:
    what = stage_label(lang, r)
    used = gb(lang, a.need_gb)
    if a.asked is None or a.verdict is None:
        return _(lang, "%(what)s: needs %(used)s per GPU") % {"what": what, "used": used}
    params = {"what": what, "gpu": f"{a.asked.count}×{gpu_name(lang, a.asked.gpu)}",
              "rollout": rollout_text(lang, a, r), "used": used, "total": gb(lang, a.asked.memory_gb)}
    if a.verdict == "fits":
        return _(lang, "%(what)s: fits on %(gpu)s%(rollout)s, %(used)s of %(total)s") % params
    if a.verdict == "tight":
        return _(lang, "%(what)s: fits on %(gpu)s%(rollout)s, but tightly: %(used)s of %(total)s") % params
    plan = next((p for p in a.plans if p.gpu == a.asked.gpu and p.count == a.asked.count and p.techniques), None)
    if plan is not None:
        used_techniques = " + ".join(technique_label(lang, t) for t in plan.techniques)
        return _(lang, "%(what)s: fits on %(gpu)s with %(change)s, %(fixed)s; as asked %(used)s of "
                       "%(total)s") % {**params, "change": used_techniques,
                                       "fixed": gb(lang, plan.per_gpu_gb + r.cuda_context)}
    fix = a.fix or next((c for c in a.changes if c.fits and c.key != "more_gpus"), None)
    if a.verdict == "fits_with_changes" and fix is not None:
        key = str(fix.params.get("posttrain_key", fix.key))
        gib = float(fix.params.get("per_gpu_total", 0)) + r.cuda_context
        return _(lang, "%(what)s: fits on %(gpu)s with %(change)s, %(fixed)s; as asked %(used)s of "
                       "%(total)s") % {**params, "change": change_words(lang, key, fix.params),
                                       "fixed": gb(lang, gib)} + tight_suffix(lang, fix)
    from engine.posttrain.result import ROLLOUT_FAILS

    stuck = next((n for n in r.notes if n in ROLLOUT_FAILS), None)
    if stuck is not None and a.need_gb <= a.capacity_gib:  # the trainers fit: the rollout is what does not run
        return _(lang, "%(what)s: the trainers fit on %(gpu)s%(rollout)s (%(used)s of %(total)s), but the rollout "
                       "does not run: %(why)s") % {**params, "why": _(lang, NOTES[stuck])}
    return _(lang, "%(what)s: does not fit on %(gpu)s as asked%(rollout)s: needs %(used)s of %(total)s") % params


def summary(lang: str, a: PostTrainAnswer, r: PostTrainResult) -> str:
    """model · method · context per sequence (and per GPU under CP) · sequences per micro-step."""
    s = a.scenario
    assert s is not None
    seq = _n(lang, "%(n)s sequence", "%(n)s sequences", r.sequences_per_micro_step) % {
        "n": r.sequences_per_micro_step}
    tokens = _(lang, "context %(v)s") % {"v": tokens_k(lang, r.tokens_per_sequence)}
    if r.tokens_per_gpu != r.tokens_per_sequence:
        tokens += " (" + _(lang, "%(t)s per GPU") % {"t": tokens_k(lang, r.tokens_per_gpu)} + ")"
    from bot.views.view import model_label

    line = f"{model_label(lang, s)} · {method_label(lang, s)} · {tokens} · {seq}"
    return line + (f" · {gpus_text(lang, s.gpu_count)}" if s.gpu_count > 1 else "")


def line_label(lang: str, key: str) -> str:
    return _(lang, LINE_LABELS[key]) if key in LINE_LABELS else component_label(lang, key)


def chart_rows(lang: str, r: PostTrainResult) -> list[tuple[str, str, float, str]]:
    """(key, label, GiB, colour) of what the busiest GPU holds at its peak (engine.parts.posttrain_parts): the
    policy's lines, those post-training adds, the allocator's slack, the CUDA context. What is freed before the peak
    is a line of the table only (a bar is not drawn below zero)."""
    rows = [(k, line_label(lang, k), v) for k, v in posttrain_parts(r).items()
            if v >= 0.05 and k != "freed_before_peak" and (k in LINE_LABELS or k in COMPONENTS)]
    return [(k, label, v, LINE_COLOURS.get(k, "#8C8C8C")) for k, label, v in rows]


def table(lang: str, r: PostTrainResult, need: float) -> list[str]:
    """The busiest GPU's peak: the policy's lines, the lines post-training adds, the rest, the total; the lines
    add up to the total (engine.parts)."""
    rows = [(line_label(lang, k), v) for k, v in posttrain_parts(r).items() if abs(v) >= 0.05]
    lines = [table_row(label, num(lang, v)) for label, v in rows]
    lines.append("─" * TABLE_WIDTH)
    lines.append(table_row(_(lang, "total, GB"), num(lang, need)))
    return lines


def change_words(lang: str, key: str, p: dict[str, Any]) -> str:
    """A change in words; one applied with others (a fused loss with CP or the offload, ALST's recipe) joined with
    "+", and its time cost when it slows the step."""
    combined = [x for x in str(p.get("with", "")).split(",") if x]
    if combined:
        rest = {k: v for k, v in p.items() if k != "with"}
        words = " + ".join([*(change_words(lang, x, {}) for x in combined), change_words(lang, key, rest)])
        factor = float(p.get("time_factor", 1.0) or 1.0)
        if factor >= 1.01:
            words += ", " + _(lang, "%(pct)s slower") % {"pct": pct(lang, round((factor - 1) * 100))}
        return words
    match key.removeprefix("posttrain.change."):
        case "fewer_generations":
            return _(lang, "fewer generations (num_generations %(n)s)") % {"n": p.get("num_generations")}
        case "shorter_completions":
            return _(lang, "shorter completions (max_completion_length %(n)s)") % {
                "n": p.get("max_completion_length")}
        case "use_lora":
            return _(lang, "LoRA instead of full fine-tuning")
        case "use_qlora":
            return _(lang, "QLoRA (4-bit base)")
        case "vllm_gpu_memory_utilization":
            return _(lang, "vLLM share %(util)s (what it needs)") % {
                "util": decimal(lang, float(p.get("vllm_gpu_memory_utilization", 0)), 2)}
        case "sleep_mode":
            return _(lang, "vLLM sleep mode during the step")
        case "vllm_server_gpu":
            return _(lang, "vLLM on a separate GPU (server mode)")
        case "vllm_tensor_parallel":
            return _(lang, "vLLM split over %(tp)s GPUs (vllm_tensor_parallel_size=%(tp)s, share %(util)s)") % {
                "tp": p.get("vllm_tensor_parallel_size"),
                "util": decimal(lang, float(p.get("vllm_gpu_memory_utilization", 0)), 2)}
        case "precompute_ref_log_probs":
            return _(lang, "precomputed reference log-probs (no reference model)")
        case "fused_loss":
            return FUSED_LOSS
        case "context_parallel":
            return _(lang, "context parallel ×%(d)s on %(gpus)s") % {"d": p.get("degree"), "gpus": _gpus(lang, p)}
        case "tensor_parallel":
            return _(lang, "tensor parallel ×%(d)s on %(gpus)s") % {"d": p.get("degree"), "gpus": _gpus(lang, p)}
        case "activation_offload":
            return _(lang, "CPU offload of activations (%(gb)s of RAM)") % {
                "gb": gb(lang, float(p.get("host_ram_gib", 0)))}
        case "tiled_mlp":
            return "TiledMLP"
    return key


def _gpus(lang: str, p: dict[str, Any]) -> str:
    n = p.get("gpus")
    return gpus_text(lang, n) if isinstance(n, int) else str(n)


def change_lines(lang: str, r: PostTrainResult) -> list[str]:
    out = []
    for c in r.changes[:5]:
        mark = (" ✓ " + _(lang, "(tight)") if c.tight else " ✓") if c.fits else ""
        out.append(f"{change_words(lang, c.key, c.params)}: {gb(lang, c.per_gpu_total + r.cuda_context)}{mark}")
    return out


SETTING_ORDER = ("per_device_train_batch_size", "num_generations", "max_prompt_length", "max_completion_length",
                 "max_length", "beta", "precompute_ref_log_probs", "use_vllm", "vllm_mode",
                 "vllm_gpu_memory_utilization", "vllm_enable_sleep_mode", "vllm_tensor_parallel_size",
                 "tensor_parallel_size", "use_liger_kernel", "gradient_checkpointing")


def settings_lines(r: PostTrainResult, share: float | None = None) -> list[str]:
    """TRL's names with the values of this estimate (Python literals, as in a config); a colocated vLLM at the share
    the estimate holds (`share`: the one the headline says), not the smaller one a change offers."""
    if r.settings.stack == "arctictraining":
        return arctic_settings_lines(r)
    values = r.settings.model_dump()
    if share is not None and r.settings.vllm_mode == "colocate" and values.get("vllm_gpu_memory_utilization"):
        values["vllm_gpu_memory_utilization"] = share
    out = []
    for k in SETTING_ORDER:
        v = values.get(k)
        if v is None or (k == "vllm_tensor_parallel_size" and v == 1):
            continue
        out.append(f"{k}={v!r}" if not isinstance(v, str) else f'{k}="{v}"')
    st = r.settings
    if st.sequence_parallel_size:
        # accelerate's ParallelismConfig (engine/configs/options/accelerate.txt): Ulysses is its sp_* with the
        # deepspeed backend, ring attention its FSDP2 cp_*; in the accelerate config file under parallelism_config
        if st.cp_kind == "ring":
            out.append(f"parallelism_config_cp_size={st.sequence_parallel_size}  # ring attention (FSDP2)")
        else:
            out.append(f"parallelism_config_sp_size={st.sequence_parallel_size}  # DeepSpeed Ulysses")
            out.append('parallelism_config_sp_backend="deepspeed"')
    alst = [name for name, on in (("activation checkpoint offload", st.activation_offload),
                                  ("TiledMLP", st.tiled_mlp)) if on]
    if alst:
        out.append(f"# {' + '.join(alst)}: ArcticTraining (ALST), arxiv.org/abs/2506.13996")
    return out


def arctic_settings_lines(r: PostTrainResult) -> list[str]:
    """ArcticTraining's recipe keys with this estimate's values (arctic_training/config/trainer.py
    sequence_parallel_size, activation_checkpoint_cpu_offload, tiled_mlp_compute; the YAML of snowflakedb/ArcticTraining
    projects/sequence-parallelism/run-*.yml)."""
    st = r.settings
    out = trainer_lines(st.per_device_train_batch_size, 1, bool(st.activation_offload), bool(st.tiled_mlp),
                        st.sequence_parallel_size or 1)
    model = (["  type: liger"] if st.use_liger_kernel else []) + (
        [] if st.gradient_checkpointing else ["  disable_activation_checkpoint: true"])
    if model:
        out.append("\n".join(["model:", *model]))
    out.append("\n".join(deepspeed_lines(bool(st.offload_optimizer), False)))
    if st.max_length:
        out.append(f"data:\n  max_length: {st.max_length}")
    return out


def parsed_assumptions_of(a: PostTrainAnswer, r: PostTrainResult) -> list[Assumption]:
    """What the parser filled from what the question implied ("DeepSpeed Ulysses" on 8 GPUs → CP ×8, "ALST" → its
    recipe), said beside the estimate's own defaults."""
    own = {str(x).partition("=")[0] for x in r.assumptions}
    return [x for x in a.assumptions if x.key in PARSED_DEFAULTS.values() and x.key not in own]


def settings_stack(r: PostTrainResult) -> str:
    """Whose names the settings block uses."""
    return "ArcticTraining" if r.settings.stack == "arctictraining" else "TRL"


STACK_NAMES = {"axolotl": "Axolotl", "llama-factory": "LLaMA-Factory", "unsloth": "Unsloth", "ms-swift": "ms-swift",
               "torchtune": "torchtune", "verl": "verl", "openrlhf": "OpenRLHF", "nemo": "NeMo"}


def settings_stack_note(lang: str, r: PostTrainResult, framework: str | None) -> str:
    """A stack named whose own keys the block does not use (LLaMA-Factory, Axolotl …): said under the block, with
    where its own file is (the ⚙️ Config button writes it)."""
    named = STACK_NAMES.get(framework or "")
    if named is None or r.settings.stack != "trl":
        return ""
    return _(lang, "These are TRL's names; the ⚙️ Config button writes the same settings as %(stack)s's own file.") % {
        "stack": named}


def assumption_words(lang: str, item: Assumption) -> str:
    """One default of the estimate: posttrain's own ("num_generations=8") here, the scenario's by words.py."""
    key, _eq, value = str(item).partition("=")  # the value as the contract prints it
    match key:
        case "num_generations":
            n = int(value) if value.isdigit() else 5
            return _n(lang, "%(v)s generation per prompt", "%(v)s generations per prompt", n) % {"v": value}
        case "output_len":
            return _(lang, "completions up to %(v)s tokens") % {"v": _length(lang, value)}
        case "prompt_len":
            return _(lang, "prompts up to %(v)s tokens") % {"v": _length(lang, value)}
        case "max_length":
            return _(lang, "pairs up to %(v)s tokens") % {"v": _length(lang, value)}
        case "beta":
            return _(lang, "KL coefficient beta %(v)s (no reference model at 0)") % {"v": value}
        case "prompts":
            n = int(value) if value.isdigit() else 5
            return _n(lang, "%(v)s prompt in the dataset (say the amount of data to change it)",
                      "%(v)s prompts in the dataset (say the amount of data to change it)", n) % {
                "v": num(lang, int(value)) if value.isdigit() else value}
        case "grad_accum":
            return _(lang, "gradient accumulation %(v)s") % {"v": value}
        case "vllm_mode":
            return _(lang, "vLLM colocated with the trainer")
        case "model_parallel_runtime":
            return _(lang, "tensor/pipeline parallelism: %(v)s") % {
                "v": _(lang, "PyTorch FSDP2 + DTensor, 1F1B pipeline (as torchtitan)") if value == "pytorch"
                else "Megatron-Core"}
        case "cp_kind":
            return _(lang, "context parallelism: %(v)s") % {"v": "DeepSpeed Ulysses" if value == "ulysses"
                                                          else _(lang, "ring attention")}
    if key == "architecture":
        value = value.removeprefix("like ")  # words.py says "like" itself
    typed: str | int = int(value) if value.isdigit() else value
    return assumption_text(lang, Assumption(key=key, value=typed))


def _length(lang: str, value: str) -> str:
    """A length in tokens as an assumption carries it ("2048") → "2k"."""
    return tokens_k(lang, int(value)) if value.isdigit() else value


def time_text(lang: str, r: PostTrainResult) -> str:
    t = r.time
    if t is None:
        return ""
    def sec(x: float) -> str:
        return num(lang, x) + NBSP + _(lang, "s")

    step = _(lang, "RL step ≈ %(step)s (generation %(gen)s, training %(train)s)") % {
        "step": sec(t.step_s), "gen": sec(t.generation_s), "train": sec(t.training_s + t.sync_s)}
    steps = _n(lang, "%(n)s step", "%(n)s steps", t.steps) % {"n": num(lang, t.steps)}
    if t.prompts is not None:  # each count takes its own plural form: "1 000 промптов = 125 шагов"
        prompts = _n(lang, "%(n)s prompt", "%(n)s prompts", t.prompts) % {"n": num(lang, t.prompts)}
        return f"{step}; {prompts} = {steps} ≈ {hours_text(lang, t.hours)}"
    return f"{step}; {steps} ≈ {hours_text(lang, t.hours)}"


def speedup_text(lang: str, a: PostTrainAnswer) -> str:
    """"speed-up over 1×A100: ×2 on 2 GPUs, ×7.8 on 8 GPUs": how much sooner more of the asked GPU ends the run
    (the same prompts split over more data-parallel ranks)."""
    if a.asked is None:
        return ""
    base = next((p for p in a.plans if p.gpu == a.asked.gpu and p.count == a.asked.count), None)
    if base is None or not base.hours:
        return ""
    parts = []
    for p in sorted(a.plans, key=lambda x: x.count):
        if p.gpu == base.gpu and p.count > base.count and p.hours:
            parts.append(_(lang, "×%(x)s on %(gpus)s") % {"gpus": gpus_text(lang, p.count),
                                                            "x": decimal(lang, base.hours / p.hours, 1)})
    return _(lang, "speed-up over %(n)s×%(gpu)s: %(parts)s") % {
        "n": base.count, "gpu": gpu_name(lang, base.gpu), "parts": ", ".join(parts)} if parts else ""


def apply(lang: str, a: PostTrainAnswer, model: dict[str, Any]) -> tuple[str, str]:
    """Replaces the plain answer's parts with the post-training ones in the view model; returns the headline and
    the summary line."""
    r = a.posttrain
    assert r is not None
    title, line = headline(lang, a, r), summary(lang, a, r)
    if a.verdict == "compare":
        title = f"{stage_label(lang, r)}: {model['headline']}"
    host = r.host_ram_gib
    model.update({
        "headline": title, "summary": line, "table": table(lang, r, a.need_gb),
        "reserve_note": any(k == "overhead" for k, *_rest in chart_rows(lang, r)),
        "changes": change_lines(lang, r) if a.verdict != "compare" else [],
        "pt_settings": settings_lines(r, vllm_share_used(a)), "pt_stack": settings_stack(r),
        "pt_stack_note": settings_stack_note(lang, r, a.request.framework),
        "notes": [*model["notes"], *(_(lang, NOTES[n]) if n in NOTES else n for n in dict.fromkeys(r.notes))],
        "pt_time": "; ".join(x for x in (time_text(lang, r), speedup_text(lang, a)) if x),
        "pt_host_ram": _(lang, "Host RAM per GPU: %(gb)s") % {"gb": gb(lang, host)} if host >= 0.05 else "",
        "assumptions": "; ".join([*(assumption_words(lang, x) for x in r.assumptions),
                                  *(assumption_text(lang, x) for x in parsed_assumptions_of(a, r))]) or "—",
        "cpu_ram_gb": 0, "cpu_ram": "",
    })
    return title, line
