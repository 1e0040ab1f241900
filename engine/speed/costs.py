"""What CPU offload, sharding communication and a second node cost in time: numbers the planner can show.

Each compares the same job (same GPUs, micro-batch and tokens per optimizer step) with and without the
mechanism, so the slowdown is the mechanism's alone.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from engine.catalog import Gpu
from engine.schema import Scenario
from engine.speed.hardware import (
    gpus_per_node,
    intra_node_gbs,
    link_kind,
    network_gbs,
    node_network_gbs,
    nodes,
    pcie_gbs,
    resolve_gpu,
)
from engine.speed.training import step_time


class OffloadCost(BaseModel):
    """CPU offload (ZeRO-Offload; with ZeRO-3 also the parameters) against the same run without it."""

    model_config = ConfigDict(defer_build=True)  # built by the first offload, multi-GPU or multi-node plan

    slowdown: float  # seconds per token with offload / without
    pcie_bytes_per_step: float  # per GPU, host <-> GPU
    pcie_gbs: float  # one GPU's host link, GB/s per direction
    transfer_seconds_per_step: float  # PCIe traffic that can overlap compute
    cpu_seconds_per_step: float  # CPU Adam + weights back, GPUs idle
    seconds_per_step: float
    seconds_per_step_without: float
    parameters_offloaded: bool  # ZeRO-3 parameter offload (weights stream in for every pass)


class CommunicationCost(BaseModel):
    """Gradient and parameter collectives (DDP all-reduce, ZeRO-2 reduce-scatter, ZeRO-3/FSDP gathers)."""

    model_config = ConfigDict(defer_build=True)  # built by the first offload, multi-GPU or multi-node plan

    slowdown: float  # seconds per token with the collectives / without
    bytes_per_step: float  # per GPU
    bus_gbs: float  # bus bandwidth the collectives run at
    link: str  # nvlink | pcie (inside a node)
    seconds_per_step: float  # collectives before overlap
    exposed_seconds_per_step: float  # what compute did not hide


class MultiNodeCost(BaseModel):
    """The inter-node network against the same GPUs all joined by the in-node link."""

    model_config = ConfigDict(defer_build=True)  # built by the first offload, multi-GPU or multi-node plan

    nodes: int
    gpus_per_node: int
    slowdown: float  # seconds per token over the network / with in-node bandwidth everywhere
    node_network_gbs: float  # all NICs of a node together, GB/s one way
    intra_node_gbs: float
    bus_gbs: float  # what the ring collectives run at: the slower of the two
    network_bytes_per_step: float  # per node, leaving it over the network
    network_seconds_per_step: float  # bandwidth + latency the network adds, before overlap


def offload_cost(scenario: Scenario, gpu: Gpu | str, count: int | None = None, *,
                 accumulation: int | None = None) -> OffloadCost:
    g = resolve_gpu(gpu)
    n = count if count is not None else scenario.gpu_count
    on = step_time(scenario.model_copy(update={"offload": True}), g, n, accumulation=accumulation)
    off = step_time(scenario.model_copy(update={"offload": False}), g, n, accumulation=accumulation)
    return OffloadCost(
        slowdown=(on.total / on.tokens) / (off.total / off.tokens), pcie_bytes_per_step=on.pcie_bytes,
        pcie_gbs=pcie_gbs(g), transfer_seconds_per_step=on.offload_transfer,
        cpu_seconds_per_step=on.offload_serial, seconds_per_step=on.total, seconds_per_step_without=off.total,
        parameters_offloaded=scenario.sharding == "zero3",
    )


def communication_cost(scenario: Scenario, gpu: Gpu | str, count: int | None = None, *,
                       accumulation: int | None = None) -> CommunicationCost:
    g = resolve_gpu(gpu)
    n = count if count is not None else scenario.gpu_count
    with_comm = step_time(scenario, g, n, accumulation=accumulation)
    alone = step_time(scenario, g, n, accumulation=accumulation, no_communication=True)
    return CommunicationCost(
        slowdown=with_comm.total / alone.total, bytes_per_step=with_comm.collective_bytes,
        bus_gbs=network_gbs(g, n), link=link_kind(g), seconds_per_step=with_comm.communication,
        exposed_seconds_per_step=with_comm.total - alone.total,
    )


def multi_node_cost(scenario: Scenario, gpu: Gpu | str, count: int | None = None, *,
                    accumulation: int | None = None) -> MultiNodeCost:
    g = resolve_gpu(gpu)
    n = count if count is not None else scenario.gpu_count
    real = step_time(scenario, g, n, accumulation=accumulation)
    ideal = step_time(scenario, g, n, accumulation=accumulation, ideal_network=True)
    k = nodes(n)
    return MultiNodeCost(
        nodes=k, gpus_per_node=min(n, gpus_per_node()), slowdown=real.total / ideal.total,
        node_network_gbs=node_network_gbs(g), intra_node_gbs=intra_node_gbs(g), bus_gbs=network_gbs(g, n),
        network_bytes_per_step=real.collective_bytes * (n - 1) / n if k > 1 else 0.0,
        network_seconds_per_step=(real.network + real.latency - ideal.latency) if k > 1 else 0.0,
    )
