"""The catalog's data files read once, and GPUs and models found by name.

Every figure in the .toml files carries its source; this module only reads and indexes them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib.resources import files
from typing import Any

from engine.catalog.ids import base_candidates
from engine.datafiles import read
from engine.schema import ModelConfig

HERE = files("engine.catalog")  # the catalogs, in a checkout or an installed wheel alike


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
    chat_id: str | None = None  # the chat / instruct repository a serving command loads (None: hf_id is one)
    # the chat repository's YaRN past its config's window: (factor, original_max_position_embeddings), or None
    chat_yarn: tuple[float, int] | None = None

    @property
    def names(self) -> tuple[str, ...]:
        """Every name the model is known by: its catalog name, its Hub ids (org/name and name) and its aliases."""
        ids = (self.hf_id, *((self.chat_id,) if self.chat_id else ()))
        return (self.name, *(x for i in ids for x in (i, i.split("/")[-1])), *self.aliases)

    @property
    def served_id(self) -> str:
        """The repository a deployment serves: the chat model, or hf_id where that already is one."""
        return self.chat_id or self.hf_id


def _load(name: str) -> dict[str, Any]:
    return read(HERE / name)


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
            chat_id=m.get("chat_id"),
            chat_yarn=(float(m["chat_yarn"]["factor"]), int(m["chat_yarn"]["original_max_position_embeddings"]))
            if m.get("chat_yarn") else None,
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
        for alias in m.names:
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
