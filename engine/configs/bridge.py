"""The only place engine.configs touches the answer, the planner and the estimator (re-point here when they move).

best_job(request, target): the answer's arrangement as a ConfigJob: a training answer's plan on the GPUs asked, a
post-training answer's settings to use, a serving answer's engine settings (TP x PP, replicas, context, share).
check_estimate(request): the `estimate` answer for a request read from a config, and the smallest changes that fit.
"""

from __future__ import annotations

from typing import Any

from engine.configs.model import ConfigJob, Target
from engine.schema import Request, Scenario

# The frameworks' own choices the estimate must assume to match what their files run.
SERVING = {"vllm", "sglang", "llama.cpp"}
FRAMEWORK_TARGET: dict[str, Target] = {"axolotl": "axolotl", "llama-factory": "llama-factory", "trl": "trl",
                                       "hf": "trl", "unsloth": "unsloth", "torchtune": "torchtune",
                                       "deepspeed": "deepspeed", "arctictraining": "arctictraining",
                                       "fsdp-qlora": "accelerate"}
ENGINE_TARGET: dict[str, Target] = {"vllm": "vllm", "sglang": "sglang", "llama.cpp": "llama.cpp", "ollama": "llama.cpp"}


def is_serving(request: Request) -> bool:
    """Whether the answer is a serving one (engine.answer's rule): inference, or a serving engine or users named
    without a training method or stage ("GRPO with vLLM" is training: vLLM generates its rollouts)."""
    if request.method == "inference":
        return True
    if request.method is not None or request.stage is not None:
        return False
    return bool(request.serving_engine or request.concurrency)


def default_target(request: Request) -> Target:
    """The framework the user named, else TRL for training and vLLM for serving."""
    if is_serving(request):
        return ENGINE_TARGET.get(request.serving_engine or "", "vllm")
    from engine.scenario import stack_of

    if stack_of(request) == "arctictraining":
        return "arctictraining"  # DeepSpeed's ALST: ArcticTraining's recipe (engine/frameworks/arctictraining.toml)
    return FRAMEWORK_TARGET.get(request.framework or "", "trl")


def as_answered(request: Request) -> Request:
    """The request as the answer above the config runs it: when no stack was named and the answer's fix is a
    stack of its own (the Answer.AI FSDP-QLoRA recipe with its CPU offload for QLoRA on two 24 GB cards,
    engine.plan.advice._single_changes), the config is written for that stack, not for the plan without the fix."""
    if request.framework is not None or is_serving(request):
        return request
    from engine.scenario import ScenarioError

    try:
        fix = getattr(_answer(request), "fix", None)
    except (ScenarioError, ValueError):
        return request
    if fix is None or not fix.fits or not fix.update.get("framework"):
        return request
    return request.model_copy(update={k: fix.update[k] for k in ("framework", "sharding") if k in fix.update})


def adapted(request: Request, target: Target) -> Request:
    """The request as the target runs it: Unsloth always fuses the loss, torchtune trains in pure bf16 with FSDP."""
    r = request.model_copy(deep=True)
    if target == "unsloth":
        r.fused_loss = True
    elif target == "arctictraining":
        r.framework, r.method = "deepspeed", "full"  # its recipes: DeepSpeed ZeRO-3, full fine-tuning
    elif target == "torchtune":
        r.mixed_precision = "pure_bf16"
        if any(g.count > 1 for g in r.gpus) and r.sharding is None:
            r.sharding = "fsdp"
    return r


def _plan(request: Request) -> Any:
    from engine.plan import plan

    return plan(request)


def _scenario_of(result: Any, request: Request) -> tuple[Scenario, Any]:
    """(the scenario of the best plan, that plan) — the base scenario when nothing fits. When the user named
    GPUs, the best plan on those GPUs at the count named wins over a cheaper one elsewhere: the config is for
    the machine they have."""
    from engine.plan.search import TECHNIQUES, asked_arrangements, at_count

    base: Scenario = result.scenario
    if not result.plans:
        return base, None
    asked = {(a.gpu, a.count) for a in asked_arrangements(request)}
    best = next((p for p in result.plans if (p.gpu, p.count) in asked), result.plans[0])
    s = base
    for name in best.techniques:
        if name in TECHNIQUES:
            s = s.model_copy(update=TECHNIQUES[name])
    return at_count(s, best.count), best


def _model_id(name: str | None, s: Scenario, served: bool = False) -> tuple[str, list[str]]:
    """The Hub id to load, and a note when it is the reference model a bare size ("8B") was estimated as. Training
    loads the catalog's hf_id (often the base); a serving command loads the chat model (CatalogModel.served_id)."""
    from engine.catalog import find_model, reference_of

    if name and "/" in name:
        return name, []  # a Hub id as the user wrote it (the base or the chat model, a quantized repo): load that
    m = find_model(name) if name else None
    if m is not None and m.hf_id:
        return (m.served_id if served else m.hf_id), []
    if not s.arch.known:
        ref = find_model(reference_of(s.arch))
        if ref is not None and ref.hf_id:
            ref_id = ref.served_id if served else ref.hf_id
            return ref_id, [f"model_assumed:{ref_id}"]
    return name or s.arch.name, []


def _answer(request: Request) -> Any:
    """The answer the user saw for the request (engine.answer): the config carries its arrangement."""
    from engine.answer import answer
    from engine.scenario import ScenarioError
    from engine.schema import ErrorAnswer, PlannedAnswer

    a = answer(request)
    if not isinstance(a, PlannedAnswer):
        note = a.errors[0] if isinstance(a, ErrorAnswer) else None
        params = dict(note.params) if note is not None else {}
        raise ScenarioError(str(params.pop("reason", note.key if note else "no_estimate")),
                            str(params.pop("why", "no_estimate")))
    return a


def best_job(request: Request, target: Target | None = None) -> tuple[ConfigJob, list[str]]:
    """The job of the answer's best plan for `target` (default: the request's framework) and notes (message
    keys): a serving answer's engine settings, a post-training answer's settings to use, a training answer's plan."""
    target = target or default_target(request)
    if target in SERVING:
        served = serving_job(request, target)
        if served is not None:
            return served
        return _planned_job(request, _plan(adapted(request, target)), None)
    from engine.schema import PostTrainAnswer

    a = _answer(adapted(request, target))
    return _planned_job(request, a, a.posttrain if isinstance(a, PostTrainAnswer) else None)


def _planned_job(request: Request, result: Any, pt: Any) -> tuple[ConfigJob, list[str]]:
    """`result`: an Answer or a PlanResult (both carry the scenario, its breakdown and the plans)."""
    s, best = _scenario_of(result, request)
    notes = [] if best else ["no_plan_fits"]
    model_id, model_notes = _model_id(request.model.name if request.model else None, s)
    notes += model_notes
    batch = request.batch_size or s.batch_size
    accum = batch // s.batch_size if s.batch_size and batch > s.batch_size else 1
    context = result.breakdown.cuda_context if result.breakdown is not None else 0.0
    job = ConfigJob(
        model=model_id,
        method=s.method, stage=request.stage or "sft", bits=s.bits, quantization=request.quantization,
        optimizer=s.optimizer, mixed_precision=s.mixed_precision, half_dtype=s.half_dtype,
        lora_rank=s.lora_rank or 16,
        lora_targets=s.lora_targets or "all_linear", seq_len=s.seq_len, batch_size=s.batch_size, grad_accum=accum,
        gradient_checkpointing=s.gradient_checkpointing, flash_attention=s.flash_attention, fused_loss=s.fused_loss,
        sharding=s.sharding, offload=s.offload, gpu_count=s.gpu_count, gpu_name=best.gpu if best else None,
        context_parallel=request.context_parallel, tensor_parallel=request.tensor_parallel,
        pipeline_parallel=request.pipeline_parallel, num_generations=request.num_generations,
        output_len=request.output_len, serving_engine=request.serving_engine, kv_cache_dtype=request.kv_cache_dtype,
        rollout_mode=(request.rollout.mode or "colocate") if request.rollout and request.rollout.engine in (
            None, "vllm") else None,
        rollout_gpu_memory_utilization=request.rollout.gpu_memory_utilization if request.rollout else None,
        rollout_tensor_parallel=request.rollout.tensor_parallel if request.rollout else None,
        rollout_sleep=bool(request.rollout.sleep) if request.rollout else False,
        concurrency=request.concurrency or (s.batch_size if s.method == "inference" else None),
        gpu_memory_utilization=request.engine_options.gpu_memory_utilization if request.engine_options else None,
        # what one GPU must hold, as the answer shows it: the reserved peak plus the CUDA context (engine.fit)
        estimate_gib=round((best.per_gpu_gb if best else result.breakdown.total) + context, 1),
    )
    if pt is not None:
        job = with_posttrain(job, pt)
    return job, notes


def with_posttrain(job: ConfigJob, pt: Any) -> ConfigJob:
    """A post-training answer's "settings to use" (engine.posttrain Settings, TRL names) in the job: the micro-batch,
    the generations and completion length, the vLLM rollout (mode, its memory share, TP, sleep), CP, the fused loss,
    the sequence it was estimated for, and the GPUs that train (server mode gives some of them to vLLM)."""
    st = pt.settings
    update: dict[str, Any] = {"batch_size": st.per_device_train_batch_size,
                              "gradient_checkpointing": st.gradient_checkpointing}
    if st.num_generations:
        update["num_generations"] = st.num_generations
    if st.max_completion_length and job.stage in ("grpo", "ppo"):
        update["output_len"] = st.max_completion_length
        update["seq_len"] = (st.max_prompt_length or 0) + st.max_completion_length
    elif st.max_length:
        update["seq_len"] = st.max_length
    if st.use_vllm and st.vllm_mode:
        share = st.vllm_gpu_memory_utilization
        if st.vllm_mode == "colocate":  # the share the estimate (and the answer's headline) holds: asked, else TRL's
            from engine.posttrain.setup import constants

            share = job.rollout_gpu_memory_utilization or float(constants()["defaults"]["vllm_gpu_memory_utilization"])
        update.update(rollout_mode=st.vllm_mode, rollout_gpu_memory_utilization=share,
                      rollout_tensor_parallel=st.vllm_tensor_parallel_size, rollout_sleep=bool(
                          st.vllm_enable_sleep_mode))
    elif job.stage in ("grpo", "ppo"):
        update.update(rollout_mode=None, rollout_gpu_memory_utilization=None, rollout_tensor_parallel=None,
                      rollout_sleep=False)
    if st.sequence_parallel_size and st.sequence_parallel_size > 1:
        update["context_parallel"] = st.sequence_parallel_size
    if st.use_liger_kernel:
        update["fused_loss"] = True
    update["activation_offload"] = bool(st.activation_offload)
    update["tiled_mlp"] = bool(st.tiled_mlp)
    return job.model_copy(update=update)


# serving: the answer's weight format → the job's (quantization, bits)
FORMAT_QUANT: dict[str, tuple[str | None, int]] = {
    "bf16": (None, 16), "fp16": (None, 16), "fp32": (None, 16), "fp8": ("fp8", 8), "int8": ("int8", 8),
    "awq": ("awq", 4), "gptq": ("gptq", 4), "bitsandbytes": ("nf4", 4), "mxfp4": ("mxfp4", 4),
    "nvfp4": ("nvfp4", 4)}
# llama.cpp's KV cache types → the job's kv_cache_dtype (serving_flags LLAMA_KV_WRITE's inverse)
LOCAL_KV = {"q8_0": "int8", "q4_0": "int4"}


def serving_job(request: Request, target: Target) -> tuple[ConfigJob, list[str]] | None:
    """The serving answer's engine settings as a job: TP x PP, the replicas (data parallel) on the GPUs, the
    context, max_num_seqs, gpu_memory_utilization, the weight and KV formats, as its launch command says them.
    None when the engine could not size it (the planner's job is written then)."""
    from engine.scenario import ScenarioError, build_scenario
    from engine.serving import serve

    engine = {"vllm": "vllm", "sglang": "sglang"}.get(target) or (
        request.serving_engine if request.serving_engine == "ollama" else "llama.cpp")
    asked = request.serving_engine or "vllm"
    req = request if asked == engine else request.model_copy(update={"serving_engine": engine})
    r = serve(req)
    st, gpu, m = r.settings, r.gpu, r.memory
    if st is None or gpu is None or m is None:
        return None
    if r.command_for is not None:  # the asked weights do not load: the change the answer's command runs
        from engine.serving import runnable

        st = runnable(st, r.changes, r.model)[0]
    try:
        s = build_scenario(req)
    except (ScenarioError, ValueError):
        return None
    model_id, notes = _model_id(request.model.name if request.model else None, s, served=True)
    fmt = st.weight_format
    quant: str | None
    if fmt.startswith("gguf:"):
        from engine.configs.readers.serving import gguf_bits

        quant, bits = fmt, gguf_bits(fmt)
    else:
        quant, bits = FORMAT_QUANT.get(fmt, (request.quantization, request.bits or 16))
    kv = "fp8" if st.kv_cache_dtype.startswith("fp8") else LOCAL_KV.get(st.kv_cache_dtype)
    users = r.users
    seqs = min(st.max_num_seqs, users) if users else st.max_num_seqs
    layers_split = st.gpu_layers is not None and st.gpu_layers < r.layers
    job = ConfigJob(
        model=model_id, method="inference", bits=bits, quantization=quant, optimizer=None,
        half_dtype=s.half_dtype, seq_len=st.max_model_len, batch_size=max(1, seqs), gradient_checkpointing=False,
        flash_attention=s.flash_attention, gpu_count=gpu.count, gpu_name=gpu.name if gpu.known else None,
        tensor_parallel=st.tensor_parallel, pipeline_parallel=st.pipeline_parallel if st.pipeline_parallel > 1
        else None, replicas=max(1, r.replicas), serving_engine=request.serving_engine, kv_cache_dtype=kv,
        concurrency=seqs, gpu_memory_utilization=st.gpu_memory_utilization,
        max_num_batched_tokens=st.max_num_batched_tokens if engine in ("vllm", "sglang") else None,
        gpu_layers=st.gpu_layers if layers_split else None,
        estimate_gib=round(m.weights_gib + m.activation_peak_gib + m.non_torch_gib + m.cuda_graph_gib
                           + max(0.0, m.kv_pool_gib), 1),
    )
    return job, notes


def check_estimate(request: Request) -> tuple[dict[str, Any] | None, list[dict[str, Any]], str | None]:
    """(estimate answer, smallest changes that fit, error) for a request read from a config."""
    from engine.contract import change_json, estimate_json
    from engine.scenario import ScenarioError

    named = [g for g in request.gpus if g.name or g.memory_gb]
    request, sized = sized_from_name(request)
    try:
        answer = estimate_json(request)
    except (ScenarioError, ValueError) as exc:
        return None, [], str(exc)
    if "error" in answer:  # a serving question the engine could not size (its reason is a message key)
        return None, [], str(answer["error"])
    if sized:
        answer["assumptions"] = [*answer.get("assumptions", []), sized]
    # a config names how many GPUs, rarely which: check the catalog (a serving or post-training answer has its own)
    if not named and "serving" not in answer and "posttrain" not in answer:
        answer["fits"] = _catalog_fits(answer, request.gpus[0].count if request.gpus else 1)
    changes: list[dict[str, Any]] = []
    if named and answer["fits"] and not any(f["fits"] for f in answer["fits"]):
        try:
            result = _plan(request)
        except (ScenarioError, ValueError):
            result = None
        if result is not None:
            changes = [change_json(c) for c in result.changes]
    return answer, changes, None


def sized_from_name(request: Request) -> tuple[Request, str | None]:
    """A model id the catalog does not know gets its size from the name as the parser reads it ("Qwen2-0.5B"): the
    one step `check` and the bot's document handler both take, with the assumption it makes."""
    from engine.catalog import find_model
    from engine.parse import parse

    m = request.model
    if m is None or not m.name or m.params_b is not None or m.config is not None or find_model(m.name):
        return request, None
    said = parse(m.name[:200]).model
    if said is None or said.params_b is None:
        return request, None
    model = m.model_copy(update={"params_b": said.params_b})
    return request.model_copy(update={"model": model}), f"params_b={said.params_b:g} (from the model name)"


def _catalog_fits(answer: dict[str, Any], count: int) -> list[dict[str, Any]]:
    from engine.fit import NO_HEADROOM, capacity, fits, headroom_gb
    from engine.plan.search import all_arrangements
    from engine.schema import Breakdown, Fit

    b = Breakdown(**answer["per_gpu"], cpu_ram=answer.get("cpu_ram_gb", 0.0),
                  trainable_params=answer.get("trainable_params", 0.0))
    # judged against what the driver reports (engine.fit.capacity: an RTX 5090 holds 31.35 GiB, not its 32 GB label)
    return [Fit(gpu=a.gpu, memory_gb=a.memory_gb, count=a.count, fits=fits(b, capacity(a.gpu, a.memory_gb),
                                                                         NO_HEADROOM),
                headroom_gb=headroom_gb(b, capacity(a.gpu, a.memory_gb))).model_dump()
            for a in all_arrangements(count)]
