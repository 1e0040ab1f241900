"""The data of a serving answer (engine.serving builds it): small named pydantic types, no text for people (message
keys with parameters)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.schema.result import Arrangement, Change, Note
from engine.schema.scenario import Assumption

EngineFamily = Literal["vllm-v0", "vllm-v1", "sglang", "tgi", "llama.cpp", "ollama", "hf"]


class Settings(BaseModel):
    """The engine settings the answer ran with (said by the request or the engine's default)."""

    model_config = ConfigDict(defer_build=True)  # built by the first serving answer

    engine: str
    family: EngineFamily
    version: str | None
    weight_format: str  # bf16 fp16 fp32 fp8 int8 gptq awq bitsandbytes mxfp4 nvfp4 gguf:<type>
    kv_cache_dtype: str  # auto (= the weights' 16 bits) fp8 int8 int4 / f16 q8_0 q4_0 for llama.cpp
    gpu_memory_utilization: float  # vLLM; SGLang: mem_fraction_static; TGI: cuda_memory_fraction
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    block_size: int
    tensor_parallel: int
    pipeline_parallel: int
    gpu_layers: int | None = None  # llama.cpp -ngl: layers on the GPU (the rest in host RAM)


class GpuChoice(BaseModel):
    model_config = ConfigDict(defer_build=True)  # built by the first serving answer

    name: str
    known: bool  # in the catalog (bandwidth, price) or only a memory size
    total_gib: float  # as the driver reports it
    count: int
    nvlink: bool
    unified_memory: bool = False  # Apple: GPU and CPU share the RAM
    compute_capability: float | None = None  # NVIDIA sm version (None: AMD, Apple or not known)
    rocm: bool = False  # an AMD Instinct / Radeon card (the catalog's rocm_arch): vLLM's ROCm platform


class RankMemory(BaseModel):
    """One GPU's budget, GiB: the figures a start-up log prints (rank 0 with PP)."""

    model_config = ConfigDict(defer_build=True)  # built by the first serving answer

    budget_gib: float  # what the engine lets itself use (gpu_memory_utilization x total, ...)
    weights_gib: float
    activation_peak_gib: float
    non_torch_gib: float
    cuda_graph_gib: float
    cuda_graphs_in_budget: bool
    kv_pool_gib: float
    host_ram_gib: float = 0.0  # llama.cpp layers left on the CPU; HF offload
    adapter_slots: int = 0  # vLLM --max-loras: LoRA slots preallocated with the weights (engine/serving/lora.py)
    adapter_slot_gib: float = 0.0  # one slot on this rank; all slots are inside weights_gib


class KvCapacity(BaseModel):
    model_config = ConfigDict(defer_build=True)  # built by the first serving answer

    bytes_per_token: float  # per GPU: K and V of every layer on the rank (sliding layers counted as full here)
    groups: int  # vLLM V1 KV cache groups (hybrid allocator); 1 for uniform models
    blocks: int
    tokens: int  # what the engine logs as its KV cache size in tokens
    max_concurrency: float  # sequences of max_model_len at once
    max_model_len_that_fits: int  # the longest single request the pool holds (capped by the model's limit)
    concurrency_at_context: float  # requests of the asked context (prompt + output) at once


class Speed(BaseModel):
    model_config = ConfigDict(defer_build=True)  # built by the first serving answer

    per_user_tokens_s: float
    total_tokens_s: float
    ttft_s: float
    bound: Literal["memory", "compute"]
    concurrency: int  # the batch the figures are for
    context: int


class Cost(BaseModel):
    model_config = ConfigDict(defer_build=True)  # built by the first serving answer

    currency: str
    per_hour: float  # all GPUs of the arrangement, typical market price
    per_month: float
    per_million_output_tokens: float
    gpu_hour_price: float
    price_source: str


class ServingArrangement(Arrangement):
    """One way to serve the asked users: the GPUs (which, the memory of each, how many), TP x PP, replicas, and
    the room it leaves on one card."""

    model_config = ConfigDict(defer_build=True)  # the training Arrangement's fields and config, built on first use

    tensor_parallel: int
    pipeline_parallel: int
    replicas: int = 1  # data-parallel copies of the TP x PP instance
    users_per_instance: int = 0  # requests of the asked context one instance runs at once
    users: int  # asked users (requests at once)
    context: int
    concurrency_at_context: float
    kv_pool_gib: float
    per_hour: float | None = None
    currency: str = "USD"
    # what a team pays for the asked load, and one card's memory for the chart
    per_million_output_tokens: float | None = None  # at the asked users, all replicas (typical hourly price)
    per_user_tokens_s: float | None = None
    nodes: int = 1  # machines of gpus_per_node the arrangement spans
    total_gib: float = 0.0  # one card as the driver reports it
    budget_gib: float = 0.0  # what the engine lets itself use of it (gpu_memory_utilization x total)
    weights_gib: float = 0.0
    activation_peak_gib: float = 0.0
    non_torch_gib: float = 0.0  # non-torch memory + CUDA graphs
    cuda_graph_gib: float = 0.0  # the graphs' part of it (outside gpu_memory_utilization on vLLM >= 0.11 V1)
    headroom_gib: float = 0.0  # one card's memory the engine leaves unused (engine.serving.budget.unused_gib)


class LoadPoint(BaseModel):
    """One instance under load (engine/serving/load.py): throughput, latencies and what binds; CONTRACT v2.1."""

    model_config = ConfigDict(defer_build=True)  # built by the first serving answer

    stable: bool = True  # False: the arrivals exceed what the instance can serve, queues grow without bound
    binding_limit: str = "none"  # kv_cache | max_num_seqs | memory_bandwidth | compute | near_capacity | overloaded
    request_rate: float | None = None  # requests/s through the instance
    concurrency: int | None = None  # requests in the system (running + queued)
    running: int | None = None  # requests decoding at once
    output_tokens_s: float | None = None
    total_tokens_s: float | None = None  # prompt + output tokens per second
    per_user_tokens_s: float | None = None
    ttft_ms: dict[str, float] = Field(default_factory=dict)  # p50 p95 p99
    ttft_mean_ms: float | None = None  # the mean (what benchmark tables that report means compare with)
    tpot_ms: dict[str, float] = Field(default_factory=dict)  # p50 p95
    e2e_ms: float | None = None
    capacity_rps: float = 0.0  # the request rate at which the KV pool / max_num_seqs binds
    max_concurrency: int = 0
    utilisation: float | None = None  # arrivals / capacity
    step_ms: float | None = None
    prefill_ms: float | None = None
    saturation_tpot_ms: float | None = None


class HostedRange(BaseModel):
    """Hosted-API prices of the model at the workload's prompt/output mix (engine/catalog/hosted_prices.toml)."""

    model_config = ConfigDict(defer_build=True)  # built by the first serving answer

    low_usd: float  # USD per 1M tokens (prompt + output), the cheapest offer
    high_usd: float
    low_provider: str
    high_provider: str
    offers: int
    oldest: str  # the oldest date among the offers
    rub_per_usd: float  # the catalog's rate for the rouble figures
    rate_date: str
    sources: list[str] = Field(default_factory=list)


class Disaggregation(BaseModel):
    """Prefill and decode on separate instances (engine/serving/disagg.py): the split and the KV transfer."""

    model_config = ConfigDict(defer_build=True)  # built by the first serving answer

    prefill_instances: int
    decode_instances: int
    link: str  # nvlink | pcie | infiniband: what the KV crosses
    transfer_ms: float  # one request's prompt KV, prefill -> decode


class ServingLoad(BaseModel):
    """The load answer: the instance's point, the whole arrangement's figures, the promise and its margin."""

    model_config = ConfigDict(defer_build=True)  # built by the first serving answer

    replicas: int = 1
    point: LoadPoint
    output_tokens_s: float | None = None  # all replicas
    total_tokens_s: float | None = None
    request_rate: float | None = None  # all replicas
    capacity_rps: float = 0.0  # all replicas
    ttft_p95_target_ms: float | None = None  # the TTFT promise (at `ttft_percentile`, p95 unless said)
    ttft_percentile: int = 95
    tpot_target_ms: float | None = None
    meets: bool | None = None  # the promise holds at the load (None when no promise was made)
    users_within_promise: int | None = None  # concurrency the arrangement holds within the promise
    per_million_tokens: float | None = None  # all tokens (prompt + output) at this load, typical hourly price
    per_million_output_tokens: float | None = None
    currency: str = "USD"
    speculative_speedup: float | None = None  # tokens/s per user with / without speculative decoding
    assumptions: list[Assumption] = Field(default_factory=list)
    curve: list[LoadPoint] = Field(default_factory=list)  # concurrency sweep for the chart
    saturation_limit: str | None = None  # what caps the requests running at once: kv_cache | max_num_seqs
    hosted: HostedRange | None = None  # hosted-API prices of the model at this prompt/output mix
    disaggregation: Disaggregation | None = None  # prefill / decode pools, when asked and run
    attention_dp: int = 1  # data-parallel attention degree (1: plain TP)

    @property
    def scale(self) -> int:
        """What the point's figures multiply by for the whole arrangement: the replicas (the point is one instance's),
        or 1 for disaggregated pools (the point is the whole's)."""
        return 1 if self.disaggregation is not None else max(1, self.replicas)


class ServingSide(BaseModel):
    """One GPU of a serving comparison ("H100 or H200 for 32 users"): whether the count named holds the asked users,
    and the smallest arrangement of that GPU that does, with its price and speed."""

    model_config = ConfigDict(defer_build=True)  # built by the first serving answer

    gpu: str
    count: int  # as named
    holds_as_named: bool = False
    holds_count: int | None = None  # GPUs of this kind that hold the asked users (None: none up to the search limit)
    per_hour: float | None = None
    per_million_output_tokens: float | None = None
    per_user_tokens_s: float | None = None
    currency: str = "USD"
    winner: bool = False
    users: int | None = None  # no users asked: the requests of the context it holds at once (priced at that load)
    engine: str | None = None  # a comparison of engines on the same GPUs («vllm или sglang»): this side's engine
    tensor_parallel: int | None = None  # a comparison of TP degrees («tp2 или tp4»): this side's degree


class AskedSetup(BaseModel):
    """The GPUs a load question named, under its load, when they miss its promise or capacity and the answer is the
    arrangement sized for it instead: what the named ones do, so that the reply answers them first."""

    model_config = ConfigDict(defer_build=True)  # built by the first serving answer

    gpu: GpuChoice
    settings: Settings
    replicas: int = 1
    load: ServingLoad
    headroom_gib: float = 0.0  # one GPU's memory the engine leaves unused, as `fits[]` counts it


class ServingResult(BaseModel):
    model_config = ConfigDict(defer_build=True)  # built by the first serving answer

    model: str
    model_known: bool = False
    params_b: float = 0.0
    layers: int = 0  # transformer blocks (llama.cpp: how many of them sit on the GPU is settings.gpu_layers)
    settings: Settings | None = None
    gpu: GpuChoice | None = None
    memory: RankMemory | None = None
    kv: KvCapacity | None = None
    speed: Speed | None = None
    cost: Cost | None = None
    users: int | None = None  # asked concurrency
    context: int = 0  # asked prompt + output (or max_model_len)
    prompt_len: int = 0
    output_len: int = 0
    replicas: int = 1  # copies of the TP x PP instance on the GPUs of the request
    fits: bool = False  # the model loads and the asked users at the asked context fit in the KV pool
    arrangement: ServingArrangement | None = None  # the smallest that serves the asked users (None when none does)
    alternatives: list[ServingArrangement] = Field(default_factory=list)
    changes: list[Change] = Field(default_factory=list)
    errors: list[Note] = Field(default_factory=list)  # input errors, and warnings beside an answer
    assumptions: list[Assumption] = Field(default_factory=list)
    command: list[str] = Field(default_factory=list)  # argv of the launch command for this configuration
    # the change the command runs instead of the asked settings, when those do not load (a Change key)
    command_for: str | None = None
    load: ServingLoad | None = None  # the load model's answer (CONTRACT v2.1), when a load or a promise is said
    # several GPUs named ("h100 or h200 for ..."): each side, the winner first; the rest of the result is the winner's
    compared: list[ServingSide] = Field(default_factory=list)
    # the GPUs named, when they miss the load's promise or capacity and the rest of the result is the sized answer
    instead_of: AskedSetup | None = None
    # "how many LoRA adapters can it serve": the slots preallocated beside the requests asked (engine/serving/lora.py)
    adapter_slots: int | None = None
    adapter_slot_mib: float | None = None
    adapter_rank: int | None = None
