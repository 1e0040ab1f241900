"""Catalogs of models, GPUs and prices: data files next to this module, loaded once.

Every figure in the .toml files carries its source; this module only reads and indexes them.
"""

from __future__ import annotations

import itertools
import math
import re
import tomllib
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib.resources import files
from typing import Any

from engine.catalog.ids import base_candidates, size_from_name
from engine.schema import Architecture, ModelConfig, ModelRef

HERE = files(__name__)  # the catalogs, in a checkout or an installed wheel alike


@dataclass(frozen=True)
class Gpu:
    name: str
    family: str | None
    family_default: bool
    aliases: tuple[str, ...]
    vendor: str
    memory_gb: float
    bandwidth_tbs: float
    bf16_tflops: float
    fp8_tflops: float | None
    interconnect: str
    year: int | None
    source: str
    driver_gib: float  # memory as the driver reports it (an "80 GB" H100: 79.19 GiB)
    bf16: bool  # compute capability >= 8.0 (T4, V100: fp16 AMP)
    flash_attention_2: bool
    bitsandbytes: bool
    compute_capability: str | None  # NVIDIA; AMD GPUs carry rocm_arch instead
    rocm_arch: str | None


@dataclass(frozen=True)
class CatalogModel:
    name: str
    hf_id: str
    aliases: tuple[str, ...]
    params_b: float
    active_params_b: float | None
    config: ModelConfig
    arch_family: str
    mlp_kind: str
    source: str
    native_format: str | None = None  # the format the checkpoint ships in (config.json quantization_config)


def _load(name: str) -> dict[str, Any]:
    with (HERE / name).open("rb") as f:
        return tomllib.load(f)


@cache
def data_file(name: str) -> dict[str, Any]:
    """One data file of this folder (prices.toml, speed.toml, ...), parsed once: read it, never change it."""
    return _load(name)


@cache
def gpus() -> tuple[Gpu, ...]:
    driver_fraction = data_file("gpus.toml")["driver"]["fraction"]
    return tuple(
        Gpu(
            name=g["name"],
            family=g.get("family"),
            family_default=g.get("family_default", False),
            aliases=tuple(g["aliases"]),
            vendor=g["vendor"],
            memory_gb=float(g["memory_gb"]),
            bandwidth_tbs=float(g["bandwidth_tbs"]),
            bf16_tflops=float(g["bf16_dense_tflops"]),
            fp8_tflops=g.get("fp8_dense_tflops"),
            interconnect=g["interconnect"],
            year=g.get("year"),
            source=g["source"],
            driver_gib=float(g.get("driver_gib") or round(float(g["memory_gb"]) * driver_fraction, 2)),
            bf16=g["bf16"],
            flash_attention_2=g["flash_attention_2"],
            bitsandbytes=g["bitsandbytes"],
            compute_capability=g.get("compute_capability"),
            rocm_arch=g.get("rocm_arch"),
        )
        for g in data_file("gpus.toml")["gpu"]
    )


def usable_memory_gib(gpu: Gpu | None = None, memory_gb: float | None = None) -> float:
    """The GPU memory a job can use, GiB: the driver-reported total of a catalog GPU (an "80 GB" H100 is
    79.19 GiB; Apple Silicon: the GPU's share of unified memory), or a bare size times the driver fraction.

    This is the capacity every fit is checked against (total + cuda_context <= usable_memory_gib).
    A size the user gave for a catalog GPU family member that the catalog lacks scales the same way.
    """
    if gpu is not None and (memory_gb is None or abs(memory_gb - gpu.memory_gb) <= 0.5):
        return gpu.driver_gib
    if memory_gb is None:
        raise ValueError("no GPU and no memory size")
    share = data_file("gpus.toml")["driver"]["apple_gpu_share"] if gpu is not None and gpu.vendor == "Apple" else \
        data_file("gpus.toml")["driver"]["fraction"]
    return round(float(memory_gb) * float(share), 2)


def unified_memory(gpu: Gpu | None) -> bool:
    """Apple Silicon: the GPU's memory is the machine's RAM (no CUDA context; offload gains nothing)."""
    return gpu is not None and gpu.vendor == "Apple"


@cache
def models() -> tuple[CatalogModel, ...]:
    return tuple(
        CatalogModel(
            name=m["name"],
            hf_id=m["hf_id"],
            aliases=tuple(m["aliases"]),
            params_b=float(m["params_b"]),
            active_params_b=m.get("active_params_b"),
            config=ModelConfig(**{"max_position_embeddings": m.get("max_position_embeddings"), **m["config"]}),
            arch_family=m["arch_family"],
            mlp_kind=m["mlp_kind"],
            source=m["source"],
            native_format=m.get("native_format"),
        )
        for m in _load("models.toml")["model"]
    )


@lru_cache(maxsize=4096)  # the planner looks the same few dozen names up thousands of times
def _key(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


@cache
def _gpu_index() -> dict[str, Gpu]:
    index: dict[str, Gpu] = {}
    for g in gpus():
        for alias in (g.name, *g.aliases):
            index.setdefault(_key(alias), g)
        if g.family and g.family_default:
            index[_key(g.family)] = g
    return index


@cache
def _model_index() -> dict[str, CatalogModel]:
    index: dict[str, CatalogModel] = {}
    for m in models():
        for alias in (m.name, m.hf_id, m.hf_id.split("/")[-1], *m.aliases):
            index.setdefault(_key(alias), m)
    return index


def find_gpu(name: str | None, memory_gb: float | None = None) -> Gpu | None:
    """A GPU by name or alias; with a memory size, the variant of that family with that size."""
    if not name:
        return None
    gpu = _gpu_index().get(_key(name))
    if gpu is None:
        return None
    if memory_gb and gpu.family and abs(gpu.memory_gb - memory_gb) > 0.5:
        same_size = [g for g in gpus() if g.family == gpu.family and abs(g.memory_gb - memory_gb) <= 0.5]
        if same_size:
            # keep the form factor the user named when the family has it at that size
            form = next((g for g in same_size if g.name.split()[-1] == gpu.name.split()[-1]), None)
            return form or same_size[0]
    return gpu


# A repository name often carries its format or publisher: "RedHatAI/Llama-3.3-70B-Instruct-fp8-dynamic",
# "Qwen/Qwen3-235B-A22B-FP8", "...-quantized.w4a16". Tried one tail at a time when the whole name is not known.
_NAME_TAIL = re.compile(
    r"[-_. ](fp8[-_]dynamic|fp8|int4|int8|w4a16|w8a8|w8a16|w4a4|awq|gptq|nvfp4|mxfp4|gguf|bnb[-_]4bit|4bit|8bit"
    r"|quantized|instruct|it|chat|hf|\d{4})$", re.IGNORECASE)


def find_model(name: str | None) -> CatalogModel | None:
    if not name:
        return None
    found = _model_index().get(_key(name))
    if found is not None:
        return found
    tail = re.sub(r"\s*\(.*\)\s*$", "", name).strip()
    tail = tail.rsplit("/", 1)[-1]
    for _ in range(6):
        found = _model_index().get(_key(tail))
        if found is not None:
            return found
        shorter = _NAME_TAIL.sub("", tail)
        if shorter == tail or not shorter:
            break
        tail = shorter
    for candidate in base_candidates(name):  # "unsloth/Llama-3.2-3B-Instruct-bnb-4bit" -> "Llama-3.2-3B"
        found = _model_index().get(_key(candidate))
        if found is not None:
            return found
    return None


# Bare sizes ("70B") are shaped like the nearest of these dense models (all Llama-style),
# with the layer count scaled to the asked size: a representative architecture, said as such.
# Each rung is the model people mean by that size, the one whose name carries it:
# "7B" the Mistral-7B / Llama-2-7B class (32k vocabulary); "8B" Llama-3/3.1-8B (128k); "13B" Llama-2-13B
# (Llama 2 came in 7B/13B/70B, and the 13B fine-tunes people name by size share its shape: Vicuna-13B,
# CodeLlama-13B; 32k vocabulary, so its logits are a fifth of a 152k-vocabulary model's); "14B" Qwen2.5-14B
# (Qwen2.5 and Phi-3-medium/Phi-4 are the 14B line); "32B" Qwen2.5-32B (no Llama of that size); "70B"
# Llama-3.1-70B; "405B" Llama-3.1-405B. engine.catalog.smaller_shapes keeps the estimate monotonic across rungs.
REFERENCE_LADDER = (
    "Qwen2.5-0.5B", "Llama-3.2-1B", "Llama-3.2-3B", "Mistral-7B-v0.3", "Llama-3.1-8B", "Llama-2-13B",
    "Qwen2.5-14B", "Qwen2.5-32B", "Llama-3.1-70B", "Llama-3.1-405B",
)


def architecture(ref: ModelRef) -> Architecture:
    """Resolve a model reference: pasted config > catalog name > representative shape for a size."""
    entry = find_model(ref.name)
    if ref.config is not None:
        params = ref.params_b * 1e9 if ref.params_b else None
        active = ref.active_params_b * 1e9 if ref.active_params_b else None
        if entry is not None:
            gated = entry.mlp_kind != "plain"
        else:  # a pasted config does not say; the stated size tells a gated MLP from a plain one
            gated = params is None or _closer_to_gated(ref.config, params)
        return _from_config(ref.name or "custom", ref.config, params, active, known=True, gated=gated)
    if entry is not None:
        active = entry.active_params_b * 1e9 if entry.active_params_b else None
        params = ref.params_b * 1e9 if ref.params_b else entry.params_b * 1e9
        return _from_config(entry.name, entry.config, params, active, known=True,
                            gated=entry.mlp_kind != "plain")
    if ref.params_b is None:
        sized = size_from_name(ref.name)  # "Yi-1.5-34B-Chat", "Foo-48B-A3B": the size the id carries
        if sized is None:
            raise ValueError("model size unknown")
        total, active = sized
        family = family_reference(ref.name, total, active)
        if family is not None:
            return family
        if active is not None:
            return representative_moe(total * 1e9, active * 1e9, ref.name)
        return representative(total * 1e9, ref.name)
    if ref.active_params_b is not None and ref.active_params_b < ref.params_b:
        return representative_moe(ref.params_b * 1e9, ref.active_params_b * 1e9, ref.name)
    return representative(ref.params_b * 1e9, ref.name)


_FAMILY = re.compile(r"([A-Za-z]+)[-_ ]?(\d+(?:\.\d+)?)?(?=[-_ .]|$|[A-Za-z])")
# a named size within this factor of a family member is that member, as it is: names round their size (Qwen2.5-7B
# has 7.6B, Qwen2.5-14B 14.8B, Gemma-3-4B 4.3B: within 9 %)
SAME_SHAPE = 1.12
FAMILY_SPAN = 2.0  # beyond this factor a family member is no reference for the size


def _family_key(text: str) -> tuple[str, float | None] | None:
    """("qwen", 2.5) for "Qwen2.5-VL-7B", ("llama", 3.2) for "Llama-3.2-11B-Vision", ("yi", 1.5) for "Yi-1.5-34B"."""
    m = _FAMILY.match(text)
    if not m or len(m.group(1)) < 2:
        return None
    return m.group(1).lower(), float(m.group(2)) if m.group(2) else None


def family_reference(name: str | None, total: float, active: float | None) -> Architecture | None:
    """A sized id of a family the catalog knows ("Qwen2.5-VL-7B", "Yi-1.5-34B-Chat") is shaped like that family's
    member nearest in version, then size (dense for dense, MoE for MoE; natively quantized and hybrid rows left
    out): its own shape when the size is within SAME_SHAPE of it, its layers scaled otherwise. Said as
    `architecture=like <member>` (Architecture.reference)."""
    bases = base_candidates(name)
    key = _family_key(bases[-1]) if bases else None
    if key is None:
        return None
    word, version = key
    pool = []
    for m in models():
        mk = _family_key(m.name)
        if mk is None or mk[0] != word or m.native_format or m.config.attention_layers is not None:
            continue
        if bool(m.active_params_b) != (active is not None):
            continue
        if abs(math.log(m.params_b / total)) > math.log(FAMILY_SPAN):
            continue
        gap = abs(version - mk[1]) if version is not None and mk[1] is not None else 0.0 if version is None else 9.0
        pool.append((gap, abs(math.log(m.params_b / total)), m))
    if not pool:
        return None
    _, distance, ref = min(pool, key=lambda x: (x[0], x[1]))
    gated = ref.mlp_kind != "plain"
    if active is not None and distance > math.log(SAME_SHAPE):
        return None  # another total: representative_moe scales the nearest MoE's experts
    if distance <= math.log(SAME_SHAPE):
        arch = _from_config(name or ref.name, ref.config, ref.params_b * 1e9,
                            ref.active_params_b * 1e9 if ref.active_params_b else None, known=False, gated=gated)
        return arch.model_copy(update={"reference": ref.name})
    base = _from_config(ref.name, ref.config, None, None, known=False, gated=gated)
    per_layer = base.linear_params / base.layers
    layers = max(1, round((total * 1e9 - base.embedding_params) / per_layer))
    scaled = ref.config.model_copy(update={"num_hidden_layers": layers})
    arch = _from_config(name or ref.name, scaled, total * 1e9, None, known=False, gated=gated)
    return arch.model_copy(update={"reference": ref.name})


def reference_of(arch: Architecture) -> str:
    """The catalog model an assumed architecture borrows its shape from (for the assumption line)."""
    return arch.reference or shape_reference(arch.params, arch.active_params)


def moe_references() -> list[CatalogModel]:
    """The catalog's mixtures of experts with a plain GQA attention (the shapes a sized MoE id borrows)."""
    return [m for m in models() if m.config.num_local_experts and m.active_params_b and not m.config.kv_lora_rank
            and not m.native_format and not m.config.attention_chunk_size and m.config.attention_layers is None]


def representative_moe(params: float, active: float, name: str | None = None) -> Architecture:
    """A mixture of experts of `params` total and `active` per token, shaped like the nearest catalog MoE (by
    total and active size): its layers and attention kept, the expert count scaled to the total and the experts
    per token to the active size. A representative shape, said as such (shape_reference)."""
    nearest = moe_reference(params, active)
    cfg = nearest.config
    base = _from_config(nearest.name, cfg, None, None, known=False, gated=nearest.mlp_kind != "plain")
    mats = 3 if base.gated_mlp else 2
    per_expert = base.layers * mats * base.hidden * base.expert_ffn
    dense_part = base.params - base.experts * per_expert - base.shared_experts * per_expert
    experts = max(2, round((params - dense_part) / per_expert) - base.shared_experts)
    per_token = max(1, min(experts, round((active - dense_part) / per_expert) - base.shared_experts))
    scaled = cfg.model_copy(update={"num_local_experts": experts, "num_experts_per_tok": per_token})
    return _from_config(name or f"{params / 1e9:g}B-A{active / 1e9:g}B", scaled, params, active, known=False,
                        gated=base.gated_mlp)


def moe_reference(params: float, active: float) -> CatalogModel:
    def distance(m: CatalogModel) -> float:
        used = (m.active_params_b or m.params_b) * 1e9
        return abs(math.log(m.params_b * 1e9 / params)) + abs(math.log(used / active))
    return min(moe_references(), key=distance)


def representative(params: float, name: str | None = None) -> Architecture:
    ladder = [m for m in models() if m.name in REFERENCE_LADDER]
    nearest = min(ladder, key=lambda m: abs(math.log(m.params_b * 1e9 / params)))
    cfg = nearest.config
    base = _from_config(nearest.name, cfg, None, None, known=False)
    per_layer = base.linear_params / base.layers
    layers = max(1, round((params - base.embedding_params) / per_layer))
    if params < base.embedding_params + per_layer:
        layers = 1
    scaled = cfg.model_copy(update={"num_hidden_layers": layers})
    return _from_config(name or f"{params / 1e9:g}B", scaled, params, None, known=False)


@lru_cache(maxsize=1024)
def smaller_shapes(params: float) -> tuple[Architecture, ...]:
    """The representative architectures of the sizes just below each shape boundary under `params`.

    A bare size borrows the nearest ladder model's shape, and the shapes differ (a 3B is shaped like
    Llama-3.2-3B with a 128k vocabulary, a 5B like Mistral-7B with 32k): just across a boundary the same
    job can need less memory than just before it. A job on a larger model needs at least what it needs on
    a smaller one, so the estimate of a bare size is at least that of each of these
    (engine.memory.breakdown takes the largest).
    """
    ladder = sorted((m for m in models() if m.name in REFERENCE_LADDER), key=lambda m: m.params_b)
    out = []
    for lower, upper in itertools.pairwise(ladder):
        boundary = math.sqrt(lower.params_b * upper.params_b) * 1e9  # where the nearest shape switches
        if boundary < params:
            out.append(representative(boundary * (1 - 1e-9)))
    return tuple(out)


def shape_reference(params: float, active: float | None = None) -> str:
    """The catalog model whose shape a bare size borrows (for the assumption line)."""
    if active is not None and active < params * 0.999:
        return moe_reference(params, active).name
    ladder = [m for m in models() if m.name in REFERENCE_LADDER]
    return min(ladder, key=lambda m: abs(math.log(m.params_b * 1e9 / params))).name


def config_params(cfg: ModelConfig, *, gated: bool = True) -> float:
    """Total parameters of an architecture as its config describes it (gated or plain two-matrix MLP)."""
    return _from_config("", cfg, None, None, known=True, gated=gated).params


def _closer_to_gated(cfg: ModelConfig, params: float) -> bool:
    return abs(config_params(cfg, gated=True) - params) <= abs(config_params(cfg, gated=False) - params)


def _from_config(name: str, cfg: ModelConfig, params: float | None, active: float | None, *,
                 known: bool, gated: bool = True) -> Architecture:
    h = cfg.hidden_size
    a = cfg.num_attention_heads
    kv = cfg.num_key_value_heads or a
    d = cfg.head_dim or max(1, h // a)
    f = cfg.intermediate_size or 4 * h
    L = cfg.num_hidden_layers
    V = cfg.vocab_size
    tied = bool(cfg.tie_word_embeddings)
    E = cfg.num_local_experts or 0
    k = cfg.num_experts_per_tok or (1 if E else 0)
    fe = cfg.moe_intermediate_size or f
    shared = cfg.n_shared_experts or 0
    mlp_mats = 3 if gated else 2
    attn = h * a * d + 2 * h * kv * d + a * d * h
    if E:
        mlp = (E + shared) * mlp_mats * h * fe + h * E
        mlp_active = (k + shared) * mlp_mats * h * fe
    else:
        mlp = mlp_active = mlp_mats * h * f
    embedding = V * h * (1 if tied else 2)
    computed = L * (attn + mlp) + embedding
    total = params or computed
    # Catalog counts are exact; the block/embedding split follows the config.
    linear = max(total - embedding, 0.0)
    if active is None:
        active = total if not E else total - L * (mlp - mlp_active)
    return Architecture(
        name=name, known=known, params=total, active_params=min(active, total), layers=L, hidden=h,
        ffn=f, heads=a, kv_heads=kv, head_dim=d, vocab=V, tied=tied, gated_mlp=gated, experts=E,
        experts_per_token=k, expert_ffn=fe, shared_experts=shared, linear_params=linear,
        embedding_params=float(embedding),
        max_position_embeddings=cfg.max_position_embeddings, sliding_window=cfg.sliding_window,
        sliding_window_pattern=cfg.sliding_window_pattern, attention_chunk_size=cfg.attention_chunk_size,
        kv_lora_rank=cfg.kv_lora_rank, qk_rope_head_dim=cfg.qk_rope_head_dim,
        attention_layers=cfg.attention_layers,
    )
