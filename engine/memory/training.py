"""The training peak as phases, not a sum.

A training step goes through three phases, each with its own live set (per GPU):

- loss: the model's checkpointed (or stored) activations, plus the logits and what cross-entropy
  keeps (engine/memory/loss.py). The loss backward finishes (and frees what cross-entropy saved)
  before the last layer's backward starts (torch.autograd runs the graph in reverse topological
  order; torch/utils/checkpoint.py recomputes a layer only when its backward is reached);
- layer backward: the stored activations, the outputs the loop still holds, and one layer's working
  set (with checkpointing, the layer recomputed from its saved input, its activations and the
  gradients flowing through it);
- optimizer step: weights, gradients, optimizer state and the step's temporaries.

The peak is max(static + stored + max(loss, held + layer), step). Where a stack leaves the whole
unsharded model on every rank after loading a full state dict (Lightning 2.1 FSDP in litgpt), that
copy is part of the static set.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.frameworks import Profile, megatron_core
from engine.memory.activations import (
    activation_bytes_per_token_layer,
    backward_working_bytes_per_token,
    checkpointed_inputs,
    offloaded_checkpoints_on_gpu,
    quantized_inputs_per_token_layer,
    selective_saved_per_token_layer,
)
from engine.memory.constants import constants
from engine.memory.lora import LoraTargets
from engine.memory.loss import held_outputs, loss_phase
from engine.memory.state import State, dequantized_weight_bytes, megatron_states, weight_bytes_per_param
from engine.schema import Scenario


@dataclass(frozen=True)
class Phases:
    stored: float  # activations kept between forward and backward (checkpointed inputs, or all)
    layer: float  # one layer's backward working set (recomputed activations + gradients)
    loss: float  # logits and cross-entropy tensors at the loss phase
    held: float  # outputs the loop keeps through backward
    dequant: float  # bitsandbytes' 16-bit copy of one quantized matrix
    gathered: float  # FSDP / ZeRO-3 units gathered whole (and a resident unsharded copy, if any)
    autocast: float  # 16-bit copies of fp32 weights that autocast keeps for backward
    backward: float
    step: float
    step_temp: float  # the optimizer step's temporaries (a non-fused Adam's foreach buffers)
    cpu_extra: float  # host RAM for offloaded activations

    @property
    def live(self) -> float:
        return max(self.backward, self.step)


def training_phases(s: Scenario, st: State, targets: LoraTargets, prof: Profile,
                    kernel: str | None = None, live_loss: bool = False) -> Phases:
    """The phases' live sets; live_loss counts the loss phase's live tensors only (engine/memory/loss.py
    live_bytes_per_logit), the allocator having released the blocks freed before them."""
    c = constants()
    arch = s.arch
    tokens = float(s.seq_len) * s.batch_size
    per_layer = activation_bytes_per_token_layer(s, targets)
    act = c["activations"]
    working = tokens * backward_working_bytes_per_token(s, targets)
    cpu_extra = 0.0
    if s.selective_checkpointing and megatron_core(s.framework):
        # Megatron-Core `--recompute-granularity selective` recomputes the core attention only (Megatron-LM 50b073cc
        # megatron/core/transformer/transformer_config.py recompute_granularity "selective": "the core attention part
        # of the transformer layer"): with a fused attention kernel that keeps no s² tensor, the rest is stored as
        # without checkpointing
        stored = tokens * per_layer * arch.layers
        layer = working
    elif s.selective_checkpointing:
        # selective op checkpointing (activations.selective_saved_per_token_layer): the layer's input and the kept
        # op outputs stay; in backward the ops not kept are recomputed beside them
        kept = selective_saved_per_token_layer(s)
        stored = checkpointed_inputs(s, tokens) + tokens * arch.layers * kept
        layer = tokens * max(0.0, per_layer - kept) * float(act["recomputed_layers"]) + working
    elif s.gradient_checkpointing:
        stored = checkpointed_inputs(s, tokens)
        # a stack whose only offload is its checkpointer's (Unsloth: use_gradient_checkpointing="unsloth")
        # offloads when asked to; plain use_gradient_checkpointing=True keeps the inputs on the GPU
        if prof.checkpoint_offload and (s.offload or prof.state_offload):  # memory.profile_offloads_checkpoints
            kept = min(stored, offloaded_checkpoints_on_gpu(s, tokens))
            cpu_extra, stored = stored - kept, kept
        if (prof.bnb_inputs_outside_checkpoint and s.method == "qlora" and s.bits == 4
                and not prof.reentrant_checkpointing):
            # the 4-bit matmuls' inputs stay on ctx in every layer (profile source: bitsandbytes < 0.43.2)
            stored += tokens * arch.layers * quantized_inputs_per_token_layer(s)
        layer = tokens * per_layer * float(act["recomputed_layers"]) + working
    else:
        stored = tokens * per_layer * arch.layers
        layer = working
    loss = loss_phase(s, tokens, prof, kernel, live=live_loss)
    held = held_outputs(s, tokens, prof, kernel)
    dequant = dequantized_weight_bytes(s, prof)

    # HF AMP keeps fp32 weights and autocast keeps 16-bit copies of them for backward
    # (Megatron-Core's model parameters are the 16-bit copy beside an fp32 master: no autocast copy)
    autocast = arch.params * 2.0 if (s.method == "full" and st.weights and s.mixed_precision == "amp"
                                     and s.sharding not in ("fsdp", "zero3")
                                     and not megatron_states(s, prof)) else 0.0
    gathered = 0.0
    sharded = s.sharding in ("fsdp", "zero3") and s.gpu_count > 1
    if sharded:
        gathered = gathered_bytes(s, prof)
    resident = 0.0
    if prof.fsdp_full_state_dict_load and sharded:
        # every rank holds the whole unsharded model beside its own shard (profile source)
        resident = arch.params * (2.0 if s.bits >= 16 else weight_bytes_per_param(s.bits, prof))
    static = st.weights + st.upcast + st.adapters + st.optimizer + gathered + resident
    activity = stored + max(loss, held + layer) + dequant
    # gradients made as the layers' backward frees activations (autograd's .grad), or held in Megatron-Core's
    # persistent buffer from the start (engine/posttrain/compose.py cites it): then they add to the activity
    grads_meet = activity + st.gradients if megatron_core(s.framework) else max(activity, st.gradients)
    backward = static + autocast + grads_meet
    # torch's fused AdamW (optim="adamw_torch_fused", transformers' default from 4.54 with torch >= 2.8) updates the
    # parameters and moments in place: torch/optim/adamw.py _fused_adamw (measured on an H200: Llama-3.1-8B full bf16
    # 59.9 GiB allocated fused, 74.8 foreach, bench/data/measured_device.jsonl)
    fused = prof.fused_adam or s.optimizer == "adamw_fused"
    step_temp = 0.0 if fused else float(c["optimizer"]["step_temp_fraction"])
    step = static + st.gradients + st.optimizer * step_temp
    return Phases(stored=stored, layer=layer, loss=loss, held=held, dequant=dequant, gathered=gathered + resident,
                  autocast=autocast, backward=backward, step=step, step_temp=st.optimizer * step_temp,
                  cpu_extra=cpu_extra)


def gathered_bytes(s: Scenario, prof: Profile) -> float:
    """What FSDP / ZeRO-3 hold gathered on every rank at the peak beside the shards (catalog memory.toml [sharding]).

    Both gather the layer being computed and prefetch the next one. ZeRO-3 keeps what is reused within
    stage3_max_reuse_distance parameters: at the turn from forward to backward, lm_head and the last layers. FSDP
    keeps its root unit (embeddings, untied lm_head) unsharded from forward to backward. Embeddings stay 16-bit;
    the layers' units are 16-bit, or 4-bit where the stack gathers quantized storage (profile fsdp_gather_bits)."""
    c = constants()["sharding"]
    arch = s.arch
    unit_bytes = 2.0 if prof.fsdp_gather_bits >= 16 or s.bits >= 16 else weight_bytes_per_param(s.bits, prof)
    layer = arch.linear_params / arch.layers
    working = 2 * layer * unit_bytes  # the unit being computed and the one prefetched
    head = arch.embedding_params if arch.tied else arch.embedding_params / 2  # lm_head (the embedding when tied)
    if s.sharding == "zero3":
        reuse = float(c["zero3_max_reuse_numel"])
        later = max(0.0, reuse - head) // (2 * layer)  # the last layers whose reuse falls inside the distance
        kept = head * 2.0 + min(arch.layers, 1 + later) * layer * unit_bytes
        prefetch = float(c["zero3_prefetch_bucket_numel"]) * unit_bytes
        return max(working, kept + prefetch)
    root = arch.embedding_params * 2.0 if prof.constant("fsdp_root_unsharded", c["fsdp_root_unsharded"]) else 0.0
    return working + root
