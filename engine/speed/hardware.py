"""The calibration of the time model (engine/catalog/speed.toml) and the links a GPU talks over.

Bandwidths are NCCL's own model of the hardware (NVIDIA/nccl src/graph/topo.h, topo.cc), so that a collective
takes what NCCL would plan for it: PCIe `width x speed / 80` GB/s (Gen3 x16 12, Gen4 24, Gen5 48), NVLink the
catalog's bidirectional figure halved (one direction) times what NCCL reaches of it, network `Gb/s x 12 / 100`
(topo.h NET_BW 12.0 for 100 Gbit).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any, Literal

from engine.catalog import Gpu, data_file, find_gpu

Link = Literal["nvlink", "pcie"]


def calibration() -> dict[str, Any]:
    """engine/catalog/speed.toml, parsed once (engine.catalog.data_file): read it, never change it. Every
    module of the time model reads it through this function, the one place to substitute another table."""
    return data_file("speed.toml")


def gpus_per_node() -> int:
    return int(calibration()["scaling"]["gpus_per_node"])


@cache
def gpu_class(gpu: Gpu) -> str:
    for name, members in calibration()["classes"].items():
        if gpu.name in members:
            return str(name)
    return "default"


def by_class(table: dict[str, Any], gpu: Gpu) -> Any:
    """The entry of a per-class table for this GPU, else its `default`."""
    return table.get(gpu_class(gpu), table["default"])


def resolve_gpu(gpu: Gpu | str) -> Gpu:
    if isinstance(gpu, Gpu):
        return gpu
    found = find_gpu(gpu)
    if found is None:
        raise ValueError(f"unknown GPU: {gpu!r}")
    return found


@cache
def link_kind(gpu: Gpu) -> Link:
    """NVLink/NVSwitch/Infinity Fabric between all GPUs of a node, or PCIe (2-way bridges count as PCIe)."""
    text = gpu.interconnect.lower()
    if "infinity fabric" in text:
        return "nvlink"
    if "nvlink" in text and "bridge" not in text and "c2c" not in text:
        return "nvlink"
    return "pcie"


def pcie_gbs(gpu: Gpu) -> float:
    """Host link of one GPU, GB/s per direction as NCCL counts it (x16 at the generation the catalog names,
    else the class's usual generation)."""
    comm = calibration()["comm"]
    gen = _named_pcie_generation(gpu) or str(by_class(comm["pcie_generation"], gpu))
    return float(comm["pcie_gbs"][gen])


@cache
def _named_pcie_generation(gpu: Gpu) -> str | None:
    found = re.search(r"pcie\s*([345])\.0", gpu.interconnect.lower())
    return found.group(1) if found else None


@cache
def _interconnect_gbs(gpu: Gpu) -> float:
    """The catalog's interconnect figure, GB/s (bidirectional as vendors quote it); 0 when none is given."""
    found = re.search(r"(\d+(?:\.\d+)?)\s*gb/s", gpu.interconnect.lower())
    return float(found.group(1)) if found else 0.0


def nvlink_gbs(gpu: Gpu) -> float:
    """One direction of the GPU's NVLink/Infinity Fabric as NCCL reaches it (0 when the catalog gives no figure)."""
    return _interconnect_gbs(gpu) / 2.0 * float(calibration()["comm"]["nvlink_efficiency"])


def intra_node_gbs(gpu: Gpu) -> float:
    """Bus bandwidth of a collective inside one node: NVLink where all GPUs share it, else PCIe."""
    if link_kind(gpu) == "nvlink":
        return nvlink_gbs(gpu) or pcie_gbs(gpu)
    return pcie_gbs(gpu)


def node_network_gbs(gpu: Gpu) -> float:
    """All of a node's network links together, GB/s one way (rail-optimised: one NIC per GPU on HGX-class nodes)."""
    net = calibration()["inter_node"]
    gbps = float(by_class(net["gbps_per_node"], gpu))
    return gbps * float(net["gbs_per_gbps"])


def network_gbs(gpu: Gpu, count: int) -> float:
    """Bus bandwidth of a ring collective over `count` GPUs. Across nodes every ring leaves each node once per
    channel, one channel per NIC, so a node's links together carry (n-1)/n of the data: the ring runs at the
    slower of the in-node link and the node's network."""
    intra = intra_node_gbs(gpu)
    if count <= gpus_per_node():
        return intra
    return min(intra, node_network_gbs(gpu))


def nodes(count: int) -> int:
    return max(1, -(-count // gpus_per_node()))
