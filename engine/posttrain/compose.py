"""Setup → per-GPU peak: the policy's breakdown from engine.memory (with adjusted scenarios) plus the lines that
post-training adds (reference, reward and value models, generation, the vLLM share), phase by phase.

The memory model's total is not a plain sum (its peak is the larger of backward and the optimizer step, plus the
allocator's slack). This layer recomposes a total with the same shape, `_peak`, and carries what it cannot see
(gathered ZeRO-3 units, autocast copies) as the residual between the memory model's total and `_peak` of its lines.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from engine import memory
from engine.frameworks import megatron_core, profile
from engine.memory.activations import selective_saved_per_token_layer
from engine.memory.state import megatron_states, zero_offload
from engine.posttrain.setup import Setup, constants
from engine.schema import Breakdown, Scenario
from engine.schema.posttrain import PREFERENCE_STAGES

GIB = float(2**30)


def _fragmentation(framework: str | None = None) -> tuple[float, float]:
    """The allocator's slack over the static and the re-made tensors (memory.allocator_slack_fractions)."""
    return memory.allocator_slack_fractions(framework)


def _peak(static: float, dynamic: float, grads: float, framework: str | None = None) -> float:
    fs, fd = _fragmentation(framework)
    live = static + max(dynamic, grads)
    return live + fs * static + fd * (live - static)


def _live(static: float, dynamic: float, grads: float) -> float:
    """The live tensors of a phase (GiB), without the allocator's slack that _peak adds."""
    return static + max(dynamic, grads)


def _pressed(total: float, live: float, card: float | None, steady: float = 0.0) -> float:
    """A phase's reserved peak on a card of `card` GiB: near the capacity the caching allocator releases its free
    cached blocks and retries before it fails (c10/cuda/CUDACachingAllocator.cpp release_cached_blocks after a failed
    cudaMalloc), so the reserved figure stops at the card, less the CUDA context and one 2 MiB block, while the slack
    of split blocks still in use (catalog memory.toml [overhead] fragmentation_floor) cannot be given back: the memory
    model's own rule (engine/memory/__init__.py with_loss_kernel), applied to the post-training phases. Only blocks
    freed and re-used at other sizes are split, so the floor is over the live set less the `steady` tensors allocated
    once and kept (weights, optimizer states, frozen copies, vLLM's weights and KV pool); gradients, made again after
    every zero_grad, stay in it. A phase whose live set and
    that floor do not fit keeps its full slack (it does not fit either way)."""
    if card is None:
        return total
    o = memory.constants()["overhead"]
    room = card - float(o["cuda_context_gib"]) - live - 2.0**21 / GIB
    if float(o["fragmentation_floor"]) * max(0.0, live - steady) <= room < total - live:
        return live + room
    return total


@dataclass
class Policy:
    b: Breakdown
    static: float  # weights + adapters + optimizer, GiB
    grads: float
    activations: float
    logits: float
    residual: float  # memory-model total not explained by _peak of its lines
    cpu: float
    overlap: float = 0.0  # GiB of logits that peak while the layers' backward is not (loss phase before layers)
    # the per-GPU lines of the states (weights, adapters, gradients, optimizer) after TP / PP / the distributed
    # optimizer: what the memory table shows, adding up to static + grads (b's own lines are the unsplit scenario's)
    states: dict[str, float] | None = None

    def lines(self) -> dict[str, float]:
        return dict(self.states) if self.states is not None else {
            k: float(getattr(self.b, k)) for k in ("weights", "adapters", "gradients", "optimizer")}


def _policy(s: Scenario, logits_gib: float | None, tp: int, stage: str = "sft", cp: bool = False,
            pp: int = 1) -> Policy:
    overlap = 0.0
    if logits_gib is not None and (stage in ("grpo", "ppo") or (stage in PREFERENCE_STAGES and not cp)):
        # the log-probabilities of the completion tokens replace the plain cross-entropy over every token: take the
        # policy's lines without that loss (the fused kernel's breakdown) and let the loss phase and the layers'
        # backward peak one after the other (engine/memory/training.py: stored + max(loss, layer)), not together
        b = memory.with_loss_kernel(s, "fused_linear")
        layer = b.activations - stored_checkpoints_gib(s)
        overlap = min(max(0.0, layer), logits_gib)
    elif logits_gib is not None:
        # this layer's own sequence-parallel loss replaces the memory model's cross-entropy: the memory model's
        # choices at the card's capacity (its loss phase released to the live tensors, the reserved peak capped)
        # were made for its own loss, not for this one; the capacity is applied once, to the phases (_pressed)
        b = memory.breakdown(s.model_copy(update={"capacity_gib": None}))
    else:
        b = memory.breakdown(s)
    static, grads = b.weights + b.adapters + b.optimizer, b.gradients
    states = {"weights": b.weights, "adapters": b.adapters, "gradients": b.gradients, "optimizer": b.optimizer}
    residual = b.total - _peak(static, b.activations + b.logits, grads, s.framework)
    if b.upcast and stage == "grpo" and not profile(s.framework).constant("grpo_kbit_upcast", 1.0):
        # the stack's GRPO trainer wraps the quantized model with get_peft_model only (profile source): the
        # embeddings and lm_head stay 16-bit, so the fp32 upcast the SFT path counts is not there
        residual -= b.upcast * (1 + _fragmentation(s.framework)[0])
    logits = b.logits if logits_gib is None else logits_gib
    act = b.activations
    mcore = megatron_core(s.framework, tp, sharding=s.sharding)
    if mcore and s.method == "full" and profile(s.framework).constant("distributed_optimizer", 0.0):
        static, grads = distributed_optimizer_states_gib(s) + b.adapters, 0.0
        p = s.arch.params / GIB
        states = {"weights": 2.0 * p, "adapters": b.adapters, "gradients": 4.0 * p,
                  "optimizer": 12.0 * p / max(1, s.gpu_count)}
        if s.mixed_precision == "amp" and s.sharding not in ("fsdp", "zero3") and not megatron_states(s):
            # the memory model's HF AMP keeps 16-bit autocast copies of fp32 weights for backward (its residual);
            # Megatron's model parameters are the 16-bit copy, counted in the 6 bytes above
            residual -= s.arch.params * 2.0 / GIB * (1 + _fragmentation(s.framework)[1])
    if tp > 1 and not mcore and logits_gib is None:
        # the stack's loss over the vocabulary shard (loss parallel) where its profile traces one (torchtitan)
        own = profile(s.framework).constant("loss_parallel_bytes", 0.0)
        kernel = memory.effective_kernel(s, profile(s.framework))
        if own and kernel not in ("fused_linear", "chunked"):
            logits *= own / memory.loss_bytes_per_logit(kernel, profile(s.framework))
    if tp > 1:
        # Megatron-style tensor parallelism with sequence parallelism: every layer's weights, their gradients
        # and optimizer states, the activations and the (vocab-parallel) logits are split over the TP group
        static, grads, act, logits, residual = static / tp, grads / tp, act / tp, logits / tp, residual / tp
        overlap /= tp
        states = {k: v / tp for k, v in states.items()}
        if not mcore and not s.async_tp:
            # AsyncTP (torchtitan `experimental.enable_async_tensor_parallel`: torch._inductor's micro-pipelined TP,
            # parallelize_llama.py apply_tp `_micro_pipeline_tp = True`) fuses each all-gather into its matmul: the
            # gathered whole-sequence inputs are not kept. Not traced in Inductor's code here; measured: torchtitan's
            # Table 4 (70B FSDP 32 x TP 8) 71.9 -> 67.6 GiB with AsyncTP, these inputs count 3.5 GiB there.
            act += dtensor_gathered_inputs_gib(s) * (1 - 1 / tp)
    if pp > 1:
        before = static
        static, grads, act, logits, residual = _pipeline_stage(s, static, grads, act, logits, residual, tp, pp, mcore)
        states = {k: v / pp for k, v in states.items()}
        if static > before / pp:
            # PyTorch-native PP: the stage's 16-bit parameters stay gathered and its fp32 gradients unsharded
            # (_pipeline_stage): 2 and 4 of the 6 bytes a parameter
            extra = static - before / pp
            states["weights"] += extra * 2.0 / 6.0
            states["gradients"] += extra * 4.0 / 6.0
    if mcore:
        # Megatron-Core's DDP keeps every gradient in one buffer allocated with the model (Megatron-LM 001199898c4b
        # megatron/core/distributed/param_and_grad_buffer.py _ParamAndGradBuffer: `self.grad_data = torch.zeros(
        # self.numel, ...)`, each param.main_grad a view into it; reset() zeroes it in place): the gradients are
        # there beside the activations from the first layer's backward on, not made as the activations are freed
        static, grads = static + grads, 0.0
    return Policy(b, static, grads, act, logits, residual, b.cpu_ram, overlap, states)


def _pipeline_stage(s: Scenario, static: float, grads: float, act: float, logits: float, residual: float, tp: int,
                    pp: int, mcore: bool) -> tuple[float, float, float, float, float]:
    """The busiest pipeline stage under 1F1B: (static, grads, activations, logits, residual) per GPU.

    Each stage holds layers / pp of the model, its states and gradients. 1F1B runs pp − rank − 1 warm-up forwards
    and one more before a stage's first backward (Megatron-LM 4dabc6238579
    megatron/core/pipeline_parallel/schedules.py forward_backward_pipelining_without_interleaving:
    `num_warmup_microbatches = get_pipeline_model_parallel_world_size() - get_pipeline_model_parallel_rank() - 1`;
    torch.distributed.pipelining Schedule1F1B the same), so the first stage keeps the checkpointed inputs of pp
    micro-batches for its layers (as many as the whole model keeps for one) and the last stage, which computes the
    loss, keeps one. The layer being recomputed is one micro-batch's either way. Under
    PyTorch-native PP the FSDP2 units of a stage are not resharded after forward (torchtitan 9dec370ad
    torchtitan/parallelisms/parallelize_llama.py apply_fsdp: `if pp_enabled: reshard_after_forward = False`, "to avoid
    per-microbatch all-gathers"), and the pipeline's backward of every micro-batch but the last runs FSDP without
    gradient sync and without resharding (pytorch torch/distributed/pipelining/stage.py _PipelineStageBase
    backward_maybe_with_nosync, as read in the code index, not pinned to the torch 1963fc83 of torchtitan's runs:
    `set_reshard_after_backward(False)`, `set_requires_gradient_sync(False)`, the reduce-scatter deferred to the last
    backward): the stage's 16-bit parameters stay gathered and its gradients accumulate unsharded in FSDP's reduce
    dtype (fp32: torchtitan 9dec370ad torchtitan/config_manager.py `--training.mixed_precision_reduce` default
    "float32") until then: 2 + 4 bytes a parameter of the stage, over TP."""
    stored = min(act, stored_checkpoints_gib(s) / tp)
    layer = act - stored
    first = stored + layer  # pp micro-batches x layers / pp
    last = stored / pp + layer + logits
    static, grads, residual = static / pp, grads / pp, residual / pp
    if not mcore and s.sharding == "fsdp" and s.gpu_count > 1:
        static += s.arch.params * (2.0 + 4.0) / tp / pp / GIB
    if first >= last:
        return static, grads, first, 0.0, residual
    return static, grads, last - logits, logits, residual


def distributed_optimizer_states_gib(s: Scenario) -> float:
    """Model states of full training under Megatron-Core's distributed optimizer, before TP/PP: 16-bit parameters
    (2 B) and the fp32 gradient buffer (4 B) whole, fp32 master weights and Adam's two moments (12 B) over the
    data-parallel (× context-parallel) ranks: 6 + 12/d bytes a parameter (Megatron-LM 50b073cc
    docs/source/api-guide/dist_optimizer.md, "bf16 param, fp32 grads": 18 non-distributed, 6 + 12/d distributed).
    d is the policy scenario's GPU count, the GPUs over TP × PP."""
    d = max(1, s.gpu_count)
    return s.arch.params * (6.0 + 12.0 / d) / GIB


def dtensor_gathered_inputs_gib(s: Scenario) -> float:
    """The all-gathered inputs that PyTorch's DTensor sequence parallelism leaves saved, whole, per layer kept.

    torchtitan 9dec370ad torchtitan/parallelisms/parallelize_llama.py apply_tp: `attention_norm` and `ffn_norm` run
    SequenceParallel (their outputs sharded on the sequence, Shard(1)), and `PrepareModuleInput(input_layouts=
    (Shard(1),), desired_input_layouts=(Replicate(),))` all-gathers them before the column-parallel wq/wk/wv and
    w1/w3: those linears save the gathered, whole-sequence input for their weight gradient (autograd keeps what
    F.linear is given; Megatron-Core instead saves the sequence shard and gathers it again in backward,
    megatron/core/tensor_parallel/layers.py LinearWithGradAccumulationAndAsyncCommunication). Two 16-bit hidden-wide
    tensors a token, in the recomputed layer under checkpointing, in every layer without it."""
    recomputed = float(memory.constants()["activations"]["recomputed_layers"])
    layers = recomputed if s.gradient_checkpointing else s.arch.layers
    return float(s.seq_len) * s.batch_size * 2 * s.arch.hidden * 2.0 * layers / GIB


def stored_checkpoints_gib(s: Scenario) -> float:
    """The layer inputs gradient checkpointing keeps on the GPU (engine/memory/activations.py checkpointed_inputs)."""
    if not s.gradient_checkpointing or (s.offload and memory.profile_offloads_checkpoints(s)):
        return 0.0
    tokens = float(s.seq_len) * s.batch_size
    kept = tokens * s.arch.layers * selective_saved_per_token_layer(s) if s.selective_checkpointing else 0.0
    return (memory.checkpointed_inputs(s, tokens) + kept) / GIB


def local_tokens(setup: Setup) -> int:
    return math.ceil(setup.tokens / setup.cp)


def policy_scenario(setup: Setup, value_head: bool = False) -> Scenario:
    s = setup.scenario
    rows = setup.sequences
    mini = int(profile(s.framework).constant("grpo_mini_batch_rows", 0.0)) if setup.stage == "grpo" else 0
    if mini > 0:
        rows = min(rows, mini)  # the stack runs the policy's forward and backward a few rows at a time (profile)
    update: dict[str, object] = {"seq_len": local_tokens(setup), "batch_size": rows,
                                 "gpu_count": max(1, s.gpu_count // (setup.tp * setup.pp))}
    if value_head:
        update["arch"] = s.arch.model_copy(update={"vocab": int(constants()["logits"]["value_head_vocab"])})
    return s.model_copy(update=update)


def logits_override(setup: Setup, s: Scenario) -> float | None:
    """GiB of the loss's logits when this layer knows better than the plain cross-entropy term."""
    c = constants()["logits"]
    vocab = s.arch.vocab
    if setup.stage in ("grpo", "ppo"):
        if setup.stage == "grpo" and profile(s.framework).constant("grpo_chunked_logprobs", 0.0):
            # the stack computes the completion log-probs from the hidden states chunk by chunk (profile source)
            tokens = max(1, math.ceil(setup.completion_len / setup.cp))
            return memory.with_loss_kernel(s.model_copy(update={"seq_len": tokens}), "fused_linear").logits
        prof = profile(s.framework)
        packed_bytes = prof.constant("rl_logprob_bytes", 0.0)
        if packed_bytes and not s.fused_loss:
            # the stack's own log-prob kernel over the micro-batch's packed tokens (profile source)
            length = setup.tokens if prof.constant("rl_logprob_all_tokens", 0.0) else setup.completion_len
            return setup.sequences * math.ceil(length / setup.cp) * vocab * packed_bytes / GIB
        if s.fused_loss:
            return memory.breakdown(s.model_copy(update={"seq_len": max(1, math.ceil(setup.completion_len /
                                                                                     setup.cp))})).logits
        return setup.sequences * math.ceil(setup.completion_len / setup.cp) * vocab * c["rl_logprob"] / GIB
    if setup.stage in PREFERENCE_STAGES and setup.cp == 1 and not s.fused_loss:
        # preference trainers take log-probabilities of the pairs (trl/trainer/dpo_trainer.py concatenated_forward):
        # the traced bytes of the kernel (engine/catalog/memory.toml [loss]), not a stack's own SFT-loss constant
        # (ms-swift's loss_bytes counts its token-accuracy pass); ORPO adds a cross-entropy over the chosen half
        # on a shifted .contiguous() copy (trl/experimental/orpo/orpo_trainer.py concatenated_forward)
        kernel = memory.effective_kernel(s, profile(s.framework))
        per_entry = memory.loss_bytes_per_logit(kernel)
        rows = setup.sequences * (1.5 if setup.stage == "orpo" else 1.0)
        return rows * local_tokens(setup) * vocab * per_entry / GIB
    if setup.cp > 1 and not s.fused_loss:
        # the stack's own sequence-parallel loss where its profile traces one, else transformers' ForCausalLMLoss
        prof = profile(s.framework)
        per_entry = prof.constant("sp_loss_bytes", 0.0) or c["long_sequence"]
        entries = setup.sequences * local_tokens(setup) * vocab
        shard_gib = prof.constant("sp_tiled_loss_shard_gib", 0.0)
        if shard_gib and entries * 4.0 > shard_gib * GIB:
            # a tiled logits + loss (profile source: DeepSpeed's TiledFusedLogitsLoss): one shard of about
            # `shard_gib` of fp32 logits at a time, each shard's backward run in forward into the hidden states'
            # gradient (`x_grad = torch.zeros_like(x)`, 16-bit)
            x_grad = setup.sequences * local_tokens(setup) * s.arch.hidden * 2.0
            return (shard_gib * GIB / 4.0 * per_entry + x_grad) / GIB
        return entries * per_entry / GIB
    return None


def frozen_copy_gib(s: Scenario, value_head: bool = False) -> float:
    """A frozen copy of the model (reference or reward), sharded as the policy's weights are (TRL prepares it with
    the same DeepSpeed/FSDP config: trl/models/utils.py prepare_deepspeed), in the base's precision."""
    arch = s.arch
    if s.bits >= 16:
        w = arch.params * 2.0
    else:
        w = arch.linear_params * memory.weight_bytes_per_param(s.bits) + arch.embedding_params * 2.0
    if value_head:
        w -= (0 if arch.tied else arch.embedding_params / 2) * 2.0  # no lm_head, a 1-wide score
    shard = s.gpu_count if s.sharding in ("fsdp", "zero3") else 1
    if s.offload and shard > 1 and (s.sharding == "fsdp" or zero_offload(s, profile(s.framework)).parameters):
        return 0.0  # the frozen copy's parameters offloaded with the policy's (ZeRO-3 offload_param, FSDP CPUOffload)
    return w / shard / GIB


def kv_cache_gib(s: Scenario, sequences: int, tokens: int) -> float:
    arch = s.arch
    return 2 * arch.layers * arch.kv_heads * arch.head_dim * constants()["generation"]["kv_bytes"] \
        * sequences * tokens / GIB


def vllm_batch(setup: Setup) -> int:
    """Sequences a vLLM engine is handed at once: its training GPU's generation batch, or every training GPU's on a
    server (TRL gathers the prompts of all processes and sends them to `trl vllm-serve`)."""
    return setup.generation_batch * (setup.train_gpus if setup.rollout == "server" else 1)


def vllm_share_gib(setup: Setup) -> float:
    """vLLM's share of its card: gpu_memory_utilization x total device memory (vllm/v1/worker/gpu_worker.py
    `requested_memory`), the utilization asked or TRL's default."""
    return vllm_util(setup) * (setup.card_gib or 0.0)


def vllm_util(setup: Setup) -> float:
    if setup.vllm_util is not None:
        return setup.vllm_util
    return float(constants()["defaults"]["vllm_gpu_memory_utilization"])


@dataclass(frozen=True)
class RolloutEngine:
    """The rollout's vLLM: what it holds beside its KV pool, what one full sequence (prompt + completion) of KV
    costs, the batch it is handed, and the margin a utilization computed from these needs (none where the serving
    engine profiled it, [vllm] util_headroom over the rough sum)."""
    held_gib: float  # weights, the activation peak / reserve, non-torch memory, CUDA graphs in the budget
    sequence_gib: float  # KV of one sequence of max_model_len = prompt + completion
    batch: int  # vllm_batch
    headroom: float

    def need_gib(self, sequences: int | None = None) -> float:
        """What vLLM needs for `sequences` full sequences of KV, by default the whole batch at once. With one it is
        what vLLM needs to start: vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory refuses a pool that
        cannot hold one request of max_model_len; a batch larger than the pool waits in vLLM's queue (`waves`)."""
        return self.held_gib + (self.batch if sequences is None else sequences) * self.sequence_gib

    def util_for(self, sequences: int | None, card_gib: float) -> float:
        """gpu_memory_utilization that holds `sequences` full sequences (None: the whole batch)."""
        return self.need_gib(sequences) * self.headroom / card_gib

    def waves(self, share_gib: float) -> int:
        """Rounds in which vLLM generates the batch with a KV pool of what its share leaves: the batch at once when
        the pool holds it, else as many full sequences at a time as it holds (continuous batching admits a request
        only when its blocks are free: vllm/v1/core/sched/scheduler.py schedule(), allocate_slots)."""
        room = share_gib - self.held_gib
        if self.sequence_gib <= 0 or room >= self.sequence_gib * self.batch:
            return 1
        return math.ceil(self.batch / max(1, math.floor(room / self.sequence_gib)))


def rollout_engine(setup: Setup) -> RolloutEngine:
    """The rollout's vLLM through the serving engine's own model (one rule for what vLLM holds): bf16 weights split
    over vllm_tensor_parallel_size, max_model_len = prompt + completion, max_num_seqs = the generation batch
    (trl/trainer/grpo_trainer.py builds LLM(max_num_seqs=per_device_train_batch_size x vllm_tensor_parallel_size x
    steps_per_generation, max_model_len=...)). Without a card, or where Unsloth shares the trainer's weights, the
    rough sum: TRL loads the model in vLLM by name (LoRA adapters merged into it), 16-bit weights with an activation
    reserve, and one KV cache per sequence."""
    v = constants()["vllm"]
    s = setup.scenario
    batch = vllm_batch(setup)
    unsloth = setup.framework == "unsloth" and v["unsloth_shares_weights"] and setup.rollout == "colocate"
    if not setup.card_gib or unsloth:
        weights = 0.0 if unsloth else s.arch.params * 2.0 / GIB / setup.vllm_tp
        return RolloutEngine(held_gib=weights * (1 + v["activation_reserve_fraction"]),
                             sequence_gib=kv_cache_gib(s, 1, setup.tokens) / setup.vllm_tp, batch=batch,
                             headroom=float(v["util_headroom"]))
    from engine.schema import GpuRef, Request
    from engine.serving.core import gpu_choice, profile, settings_for

    gpu, _ = gpu_choice(GpuRef(name=setup.gpu_name, count=setup.vllm_tp, total_gib=setup.card_gib))
    request = Request()
    fmt = s.half_dtype  # the weights vLLM loads in the dtype the GPU trains in
    settings = settings_for(request, "vllm", fmt, "auto", gpu, setup.vllm_tp, 1, setup.tokens)
    settings = settings.model_copy(update={"gpu_memory_utilization": vllm_util(setup),
                                           "max_num_seqs": max(1, batch * setup.vllm_tp)})
    p = profile(request, s.arch, settings, gpu, setup.tokens, batch)
    m = p.memory
    held = m.weights_gib + m.activation_peak_gib + m.non_torch_gib + (m.cuda_graph_gib if m.cuda_graphs_in_budget
                                                                     else 0.0)
    return RolloutEngine(held_gib=held, sequence_gib=p.kv.bytes_per_token * setup.tokens / GIB, batch=batch,
                         headroom=1.0)


@dataclass
class Composed:
    total: float
    trainer_peak: float
    phase: str
    lines: dict[str, float]
    policy: Policy
    host_ram: float
    vllm_share: float
    vllm_util_needed: float | None  # gpu_memory_utilization that holds the whole generation batch at once
    vllm_util_to_start: float | None  # the least with which vLLM starts (one full sequence of KV)
    vllm_waves: int  # rounds in which vLLM generates the batch with its share (RolloutEngine.waves)


def cp_buffers_gib(setup: Setup, s: Scenario) -> float:
    if setup.cp <= 1:
        return 0.0
    c = constants()["context_parallel"]
    arch = s.arch
    q, kv = arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim
    t = setup.sequences * local_tokens(setup)
    if setup.cp_kind == "ulysses":
        # fewer KV heads than ranks: each rank's k and v are repeated to one head a rank before the all-to-all
        # (DeepSpeed edaa7221 deepspeed/runtime/sequence_parallel/ulysses_sp.py UlyssesSPAttentionHF:
        # `kv_replication_factor = world_size // kv_head_count`, `input.repeat_interleave(...)`), so the buffers and
        # the k, v the attention keeps for backward are that wide
        wide_kv = max(arch.kv_heads, setup.cp) * arch.head_dim
        kept = 2 * (wide_kv - kv) * 2.0 * t
        return (c["ulysses_buffers"] * t * (2 * q + 2 * wide_kv) * 2.0 + kept) / GIB
    return c["ring_kv_buffers"] * t * 2 * kv * 2.0 / GIB + t * arch.heads * (arch.head_dim + 1) * 4.0 / GIB


def alst_adjust(setup: Setup, s: Scenario, act: float) -> tuple[float, float]:
    """(activations on the GPU, host RAM) with ALST activation checkpoint offload."""
    if not (setup.options.activation_offload and s.gradient_checkpointing):
        return act, 0.0
    arch = s.arch
    resid = 2.0
    ckpt = setup.sequences * local_tokens(setup) * arch.layers * arch.hidden * resid / GIB / setup.tp
    moved = ckpt * (arch.layers - 1) / arch.layers  # split over the TP group as the activations are (_policy)
    return max(0.0, act - moved), moved


def tiled_mlp_saving(setup: Setup, s: Scenario) -> float:
    """GiB that TiledMLP takes off the recomputed layer's backward (deepspeed ulysses_sp.py TiledMLP: forward under
    no_grad, backward re-running each shard's forward and backward, one tile of tokens at a time).

    The MLP's f-wide tensors, those the layer keeps (engine/memory/activations.py mlp_wide_bytes_per_token) and the
    gradients its backward makes of them (backward_gradients_per_token), live one tile at a time instead of whole, so
    the layer's backward peaks at its attention: the recomputed layer without its MLP's f-wide tensors, plus the
    attention's gradients."""
    if not setup.options.tiled_mlp:
        return 0.0
    arch = s.arch
    targets = memory.lora_targets_of(s)
    per_layer = memory.activation_bytes_per_token_layer(s, targets)
    wide = memory.mlp_wide_bytes_per_token(s, targets)
    recomputed = float(memory.constants()["activations"]["recomputed_layers"]) if s.gradient_checkpointing else 0.0
    mlp_grads, attention_grads = memory.backward_gradients_per_token(s, targets)
    counted = per_layer * recomputed + max(mlp_grads, attention_grads)
    tokens = setup.sequences * local_tokens(setup)
    tiles = max(constants()["alst"]["tiled_mlp_min_tiles"], math.ceil(tokens / arch.hidden))
    tiled = (per_layer - wide) * recomputed + max(attention_grads, (wide * recomputed + mlp_grads) / tiles)
    return tokens * max(0.0, counted - tiled) / GIB


def compose(setup: Setup) -> Composed:
    fs, fd = _fragmentation(setup.scenario.framework)
    s = policy_scenario(setup, value_head=setup.stage == "rm")
    pol = _policy(s, logits_override(setup, s), setup.tp, setup.stage, setup.cp > 1, setup.pp)
    act, host = alst_adjust(setup, s, pol.activations)
    act = max(0.0, act - tiled_mlp_saving(setup, s) / setup.tp)
    lines: dict[str, float] = {}
    static_extra, grads_extra, dyn_extra = 0.0, 0.0, 0.0
    if setup.reference == "copy":
        lines["reference_model"] = frozen_copy_gib(s) / setup.tp
    if setup.stage == "ppo":
        lines["reward_model"] = frozen_copy_gib(s, value_head=True) / setup.tp
        v = _policy(policy_scenario(setup, value_head=True), None, setup.tp)
        lines["value_model"] = v.static + v.grads
        static_extra += v.static
        grads_extra += v.grads
        dyn_extra += v.activations + v.logits  # one backward through PolicyAndValueWrapper (ppo_trainer.py)
        host += v.cpu
    cpb = cp_buffers_gib(setup, s)
    if cpb:
        lines["cp_buffers"] = cpb
    static_extra += lines.get("reference_model", 0.0) + lines.get("reward_model", 0.0)
    static = pol.static + static_extra
    dyn_train = act + pol.logits - pol.overlap + dyn_extra + cpb
    train = _peak(static, dyn_train, pol.grads + grads_extra, s.framework) + pol.residual
    train_live = _live(static, dyn_train, pol.grads + grads_extra) + pol.residual
    if setup.options.activation_offload or setup.options.tiled_mlp:
        # the memory model's residual takes off what its loss and layer phases share, as it counted them; once ALST
        # has offloaded the checkpoints and TiledMLP tiled the layer, the step still peaks at its largest phase alone
        largest = max(act, pol.logits - pol.overlap) + dyn_extra + cpb
        train = max(train, _peak(static, largest, pol.grads + grads_extra, s.framework))
        train_live = max(train_live, _live(static, largest, pol.grads + grads_extra))

    # generation phase (GRPO/PPO): gradients were freed by zero_grad; the rollout engine works
    gen = gen_live = 0.0
    share = 0.0
    util_needed: float | None = None
    util_to_start: float | None = None
    waves = 1
    if setup.stage in ("grpo", "ppo"):
        if setup.rollout is None:
            kv = kv_cache_gib(s, setup.generation_batch, setup.tokens)
            gathered = 0.0
            if s.sharding in ("zero3", "fsdp") and s.gpu_count > 1:
                params = s.arch.params
                if setup.stage == "ppo":
                    # PPO gathers self.model, the PolicyAndValueWrapper: the value model's backbone comes along
                    # (trl/experimental/ppo/ppo_trainer.py, unwrap_model_for_generation(self.model, ...))
                    params += s.arch.params - (0 if s.arch.tied else s.arch.embedding_params / 2)
                gathered = params * constants()["generation"]["gather_bytes_per_param"] / GIB / setup.tp
                lines["generation_gathered_weights"] = gathered
            lines["generation_kv_cache"] = kv
            # the gathered parameters are all-gathered once into whole-size buffers and held through generation
            # (DeepSpeed edaa7221 deepspeed/runtime/zero/partition_parameters.py GatheredParameters: one
            # `torch.empty(param.ds_numel)` a parameter, freed on exit), so they take the states' slack; the KV
            # cache grows step by step (the dynamic slack)
            gen = (static + gathered) * (1 + fs) + kv * (1 + fd) + pol.residual
            gen_live = static + gathered + kv + pol.residual
        else:
            engine = rollout_engine(setup)
            card = setup.card_gib
            if card:
                util_needed, util_to_start = engine.util_for(None, card), engine.util_for(1, card)
                waves = engine.waves(vllm_share_gib(setup))
            if setup.rollout == "colocate":
                share = vllm_share_gib(setup) if card else engine.need_gib()
                lines["vllm_share"] = share
                awake = share
                if setup.framework == "unsloth" and constants()["vllm"]["unsloth_shares_weights"]:
                    awake = max(0.0, share - pol.b.weights)  # the trainer's (possibly 4-bit) weights are vLLM's
                # what stays while asleep is a share of what vLLM allocated itself (with Unsloth's shared weights,
                # not the trainer's weights inside its share)
                asleep = awake * constants()["vllm"]["sleep_residual_fraction"]
                standby = setup.sleep or setup.framework == "unsloth"
                gen = static * (1 + fs) + awake + pol.residual
                gen_live = static + awake + pol.residual
                if awake < share:
                    # Unsloth standby: vLLM's budget (gpu_memory_utilization x card) holds the trainer's weights it
                    # shares, so the process's generation peak is that budget, or the trainer's states if larger
                    # (docs.unsloth.ai/basics/memory-efficient-rl: set it to 0.9-0.95 of the card with standby)
                    gen = gen_live = max(share, static * (1 + fs) + pol.residual)
                train += asleep if standby else awake
                train_live += asleep if standby else awake
    kept = static + share  # weights, optimizer states, frozen copies, vLLM's share: allocated once, kept
    train, gen = _pressed(train, train_live, setup.card_gib, kept), _pressed(gen, gen_live, setup.card_gib, kept)
    total = max(train, gen)
    trainer_peak = total - (share if setup.rollout == "colocate" and not (setup.sleep or setup.framework ==
                                                                          "unsloth") else 0.0)
    host += pol.cpu
    if setup.sleep and setup.rollout == "colocate":
        lines["vllm_asleep"] = share * constants()["vllm"]["sleep_residual_fraction"]
    return Composed(total=total, trainer_peak=trainer_peak, phase="generate" if gen > train else "train",
                    # the policy's activations as the GPU holds them: less what ALST offloads and TiledMLP tiles
                    lines=lines, policy=replace(pol, activations=act), host_ram=host, vllm_share=share,
                    vllm_util_needed=util_needed,
                    vllm_util_to_start=util_to_start, vllm_waves=waves)
