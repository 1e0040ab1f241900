"""What autograd keeps per token per layer, and what a backward pass over one layer needs.

Counted tensor by tensor from what PyTorch saves (Korthikanti et al. 2022, "Reducing Activation
Recomputation in Large Transformer Models", section 4.1, adapted to RMSNorm, rotary attention with
GQA, gated MLPs, frozen and 4-bit base layers).
"""

from __future__ import annotations

from engine.frameworks import profile
from engine.memory.constants import constants
from engine.memory.lora import LoraTargets
from engine.memory.state import fp32_model_weights
from engine.schema import Architecture, Scenario


def active_ffn(arch: Architecture) -> int:
    """The MLP width a token passes through: the routed and shared experts it uses, or the dense FFN."""
    return (arch.experts_per_token + arch.shared_experts) * arch.expert_ffn if arch.experts else arch.ffn


def _attention_kind(s: Scenario) -> str:
    if s.flash_attention:
        return "flash"
    return s.attention if s.attention in ("sdpa", "eager") else "eager"


def _saved_input(s: Scenario, targets: LoraTargets, width: float, modules: set[str]) -> float:
    """A projection group's input as kept for backward, per token (16-bit).

    A linear layer keeps its input only when its weight is trained (or bitsandbytes 4-bit, which always keeps it).
    What lora_A keeps of its input is 16-bit even for fp32 adapters: PEFT casts x to the adapter's dtype
    (huggingface/peft 5d602fdbf src/peft/tuners/lora/layer.py Linear.forward `x = self._cast_input_dtype(x,
    lora_A.weight.dtype)`, then `lora_B(lora_A(dropout(x)))`), but under autocast F.linear runs on its 16-bit cast
    of that input and saves the cast; dropout saves only its bool mask (native_dropout_backward(grad, mask, scale)),
    and the fp32 copies are freed once cast (DeepSpeed bf16 runs the adapters in bf16 anyway)."""
    act = 2.0
    keeps_inputs = s.method == "full" or (s.method == "qlora" and s.bits == 4)
    peft = s.method in ("lora", "qlora")
    prof = profile(s.framework)
    default_dropout = bool(constants()["activations"]["lora_dropout"])
    dropout = peft and (default_dropout if prof.lora_dropout is None else prof.lora_dropout)
    adapted = modules & targets.modules if peft else set()
    kept = act if keeps_inputs else 0.0
    if adapted and dropout:
        # each adapter has its own dropout: its output as lora_A keeps it (16-bit) and a bool mask
        copies = 1 if targets.qkv_fused and modules == {"q", "k", "v"} else len(adapted)
        kept += copies * (act + 1)
    elif adapted:
        kept = act  # lora_A keeps the (shared) input itself
    return width * kept


def mlp_wide_bytes_per_token(s: Scenario, targets: LoraTargets) -> float:
    """The MLP's f-wide part of what a layer keeps, per token: SiLU(gate)·up keeps gate, SiLU out and up (Liger's
    SiLU·mul, or a compiled block, gate and up only), and down_proj's input where it is kept."""
    arch = s.arch
    f = active_ffn(arch)
    liger = liger_layer_kernels(s) or s.compiled
    inner = (3 if arch.gated_mlp and not liger else 2 if arch.gated_mlp else 1) * 2.0 * f
    return inner + _saved_input(s, targets, f, {"down"})


def activation_bytes_per_token_layer(s: Scenario, targets: LoraTargets) -> float:
    """Bytes autograd keeps per token per layer between forward and backward (no recomputation).

    RMSNorm keeps its fp32 input; a linear layer keeps its input only when its weight is trained (or
    bitsandbytes 4-bit, which always keeps it); SiLU·up keeps three f-wide tensors; flash attention
    and SDPA's memory-efficient kernel keep q, k, v and the output (no s² term); eager attention
    keeps the fp32 softmax and its 16-bit copy (a·s per token).
    """
    arch = s.arch
    h, q_dim, kv_dim = arch.hidden, arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim
    act = 2.0  # 16-bit activations (bf16, or fp16 on GPUs without bf16)
    full = s.method == "full"
    peft = s.method in ("lora", "qlora")
    if peft and profile(s.framework).lora_kernels == "unsloth":
        return _unsloth_lora_bytes(s)
    liger = liger_layer_kernels(s) or s.compiled
    # HF's RMSNorm keeps its fp32 upcast input; Liger's keeps the 16-bit input and an fp32 rstd per row, and so does
    # a torch.compile'd block: Inductor's partitioner recomputes the pointwise ops in backward rather than saving
    # their outputs (torch/_functorch/partitioners.py min_cut_rematerialization_partition), so the fused RMSNorm and
    # SiLU·mul keep their inputs only (torchtitan 9dec370ad parallelize_llama.py apply_compile compiles each
    # TransformerBlock, fullgraph=True)
    norms = 2 * (h * act + 4) + 2 * h * (act if full else 0) if liger else 2 * h * (4 + (act if full else 0))
    attention_in = _saved_input(s, targets, h, {"q", "k", "v"})
    attention = act * (2 * q_dim + 2 * kv_dim)
    if _attention_kind(s) == "eager":
        # eager: fp32 softmax output and its 16-bit copy, a·s per token
        attention += (4 + act) * arch.heads * s.seq_len
    attention_out = _saved_input(s, targets, q_dim, {"o"})
    mlp_in = _saved_input(s, targets, h, {"gate", "up"})
    return norms + attention_in + attention + attention_out + mlp_in + mlp_wide_bytes_per_token(s, targets)


def liger_layer_kernels(s: Scenario) -> bool:
    """Whether the fused loss the scenario asks for comes with Liger's layer kernels (profile constant
    liger_layer_kernels): a stack whose `use_liger_kernel` goes through transformers' _apply_liger_kernel_to_instance
    patches RMSNorm and SwiGLU as well as the loss. Liger-Kernel 3baaa6bb1419 src/liger_kernel/ops/swiglu.py
    LigerSiLUMulFunction.forward `ctx.save_for_backward(a, b)` (the SiLU product recomputed in backward),
    ops/rms_norm.py LigerRMSNormFunction.forward `ctx.save_for_backward(X, W, RSTD)` (16-bit input, fp32 rstd a
    row)."""
    return bool(s.fused_loss) and bool(profile(s.framework).constant("liger_layer_kernels", 0.0))


def _unsloth_lora_bytes(s: Scenario) -> float:
    """Unsloth's fused LoRA layers (unsloth/kernels/fast_lora.py), per token per layer, 16-bit.

    LoRA_QKV saves only its input X; LoRA_W (o_proj) its input, the attention output; LoRA_MLP saves X and
    the gate and up outputs e, g (the SiLU·up product is recomputed in backward, in place). The fast
    RMSNorm (unsloth/kernels/rms_layernorm.py) saves its input and an fp32 rsqrt per row; flash attention
    keeps q, k, v and the output. LoRA dropout is 0 on this path (unsloth/models/llama.py get_peft_model:
    "Dropout = 0 is supported for fast patching").
    """
    arch = s.arch
    h, q_dim, kv_dim = arch.hidden, arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim
    f = active_ffn(arch)
    act = 2.0
    norms = 2 * (h * act + 4)
    qkv_in = h * act
    attention = act * (2 * q_dim + 2 * kv_dim)  # q, k, v and the output (LoRA_W's saved input)
    if _attention_kind(s) == "eager":
        attention += (4 + act) * arch.heads * s.seq_len
    mlp = h * act + (2 if arch.gated_mlp else 1) * f * act
    return norms + qkv_in + attention + mlp


def backward_gradients_per_token(s: Scenario, targets: LoraTargets) -> tuple[float, float]:
    """(at the MLP's backward, at the attention's backward): the gradients one layer's backward allocates beside the
    layer's own saved tensors, per token, counted tensor by tensor (16-bit).

    Both hold the residual stream's incoming gradient dY and the layer input's gradient dX (2 h). The MLP's backward
    adds its f-wide gradients: down_proj's input gradient, then autograd's SiLU(gate)·up backward makes mul's
    d(SiLU out) and d(up) and silu_backward's d(gate), at most three f-wide at once; a compiled block's fused SiLU·mul
    backward never makes d(SiLU out) (two); Liger's SiLU·mul writes d(gate) and d(up) into the gate and up outputs it
    saved (Liger-Kernel 06e2af7d src/liger_kernel/ops/swiglu.py _swiglu_backward_kernel `tl.store(a_ptr, da_row)`,
    `tl.store(b_ptr, db_row)`), leaving down_proj's input gradient (one); a plain MLP, its activation's and fc1's
    (two). The attention's backward adds FlashAttention's dq, dk, dv (flash-attn flash_attn_interface.py
    _flash_attn_backward: `torch.empty_like` of q, k, v) and the attention output's gradient, and with eager attention
    the gradient of the softmax (fp32) and of the scores (16-bit), a·s a token.

    Unsloth's fused LoRA MLP works in place (unsloth 015bdef0d9 unsloth/kernels/fast_lora.py LoRA_MLP.backward:
    `DW = matmul_lora(dY, ...)` is the one new f-wide tensor; `_backward_function(DW, e, g)` writes h, df, de into
    DW, e, g; `torch.matmul(df, upW.t(), out = X)` writes dX into the saved input): (f + 2h) at its MLP, as above."""
    arch = s.arch
    h, q, kv = arch.hidden, arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim
    f = active_ffn(arch)
    attention = 2.0 * (2 * h + 2 * q + 2 * kv)
    if _attention_kind(s) == "eager":
        attention += (4 + 2.0) * arch.heads * s.seq_len
    if s.method in ("lora", "qlora") and profile(s.framework).lora_kernels == "unsloth":
        return 2.0 * (f + 2 * h), attention
    if not arch.gated_mlp:
        wide = 2
    elif liger_layer_kernels(s):
        wide = 1
    elif s.compiled:
        wide = 2
    else:
        wide = 3
    return 2.0 * (2 * h + wide * f), attention


def backward_working_bytes_per_token(s: Scenario, targets: LoraTargets) -> float:
    """What one layer's backward allocates beside the layer's own saved tensors, per token: its larger moment."""
    return max(backward_gradients_per_token(s, targets))


def offloaded_checkpoints_on_gpu(s: Scenario, tokens: float) -> float:
    """What stays on the GPU of the checkpointed layer inputs when the stack's checkpointer offloads them.

    unsloth-zoo ce232d6c unsloth_zoo/gradient_checkpointing.py UnslothCheckpointFunction.forward: the last layer's
    input is not offloaded (`CURRENT_GC_INDEX != LAST_GC_INDEX`, saved with save_for_backward), and every offloaded
    input comes back in backward into one persistent GPU buffer per device (`GPU_BUFFER.resize_(new_size)`, reused
    layer after layer): two layer inputs, 16-bit. A second buffer (double buffering) is allocated only while more
    than 512 MiB stay free (DOUBLE_BUFFER_HEADROOM), so it is not counted at the fit's edge."""
    return 2.0 * tokens * s.arch.hidden * 2.0


def quantized_inputs_per_token_layer(s: Scenario) -> float:
    """Inputs of the 4-bit matmuls of one layer, 16-bit, per token (q/k/v and gate/up share theirs)."""
    arch = s.arch
    f = active_ffn(arch)
    return 2.0 * (arch.hidden + arch.heads * arch.head_dim + arch.hidden + f)


def selective_saved_per_token_layer(s: Scenario) -> float:
    """What selective op activation checkpointing keeps per token per layer, 16-bit, beyond the layer's input.

    torchtitan 9dec370ad torchtitan/parallelisms/parallelize_llama.py _apply_ac_to_transformer_block (mode
    "selective", selective_ac_option "op", its llama3 configs' setting): the policy saves the outputs of the ops in
    _save_list (aten.mm, the SDPA flash / efficient kernels, reduce_scatter, abs/max) except every second mm
    (`meta[mm_count_key] % 2 == 0` recomputes). A block runs wq, wk, wv, wo, w1, w3, w2 in that order
    (torchtitan/models/llama/model.py Attention.forward, FeedForward.forward `w2(F.silu(w1(x)) * w3(x))`), so the
    1st, 3rd, 5th and 7th are kept: wq's (q width), wv's (kv width), w1's (f) and w2's (h) outputs; plus the
    attention output (q width) and its fp32 logsumexp a head."""
    arch = s.arch
    q, kv = arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim
    f = active_ffn(arch)
    widths = [q, kv, kv, arch.hidden] + ([f, f, arch.hidden] if arch.gated_mlp else [f, arch.hidden])
    kept = sum(w for i, w in enumerate(widths) if i % 2 == 0)
    return 2.0 * (kept + q) + 4.0 * arch.heads


def checkpointed_inputs(s: Scenario, tokens: float) -> float:
    """With gradient checkpointing: each layer's input (the residual stream) stays until its backward, in the
    weights' precision (state.fp32_model_weights: fp32 under HF AMP, 16-bit under DeepSpeed, FSDP, Megatron)."""
    resid = 4.0 if fp32_model_weights(s) or s.bits == 32 else 2.0
    return tokens * s.arch.layers * s.arch.hidden * resid
