"""The time cost of CPU offload, of sharding communication over NVLink and PCIe, and of a second node;
the published runs the model is checked against (bench/speed_accuracy.py)."""

from __future__ import annotations

import copy
import importlib.util
import itertools
import statistics
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from engine import speed
from engine.catalog import architecture, find_gpu
from engine.schema import ModelRef, Scenario
from engine.speed import hardware

ROOT = Path(__file__).resolve().parents[3]


def scenario(method: str = "full", *, params_b: float | None = None, model: str | None = "Llama-2-7B",
             **changes: Any) -> Scenario:
    arch = architecture(ModelRef(params_b=params_b) if params_b else ModelRef(name=model))
    fields: dict[str, Any] = dict(
        arch=arch, method=method, bits=4 if method == "qlora" else 16, optimizer="adamw", mixed_precision="amp",
        lora_rank=8, lora_targets="all_linear", seq_len=2048, batch_size=1, gradient_checkpointing=True,
        flash_attention=True, fused_loss=False, sharding="none", offload=False, gpu_count=1, assumptions=[])
    fields.update(changes)
    return Scenario(**fields)


def with_pcie_gen4(monkeypatch: pytest.MonkeyPatch, gbs: float) -> None:
    """speed.toml with another PCIe Gen4 bandwidth (a copy: the loaded table is shared and never changed)."""
    table = copy.deepcopy(hardware.calibration())
    table["comm"]["pcie_gbs"]["4"] = gbs
    monkeypatch.setattr(hardware, "calibration", lambda: table)


# ---- CPU offload ---------------------------------------------------------------------------------------------


def test_offload_costs_time_for_the_bytes_it_moves_and_the_cpu_adam_step() -> None:
    sc = scenario("full", sharding="zero2", offload=True)
    cost = speed.offload_cost(sc, "RTX 4090", 1)
    assert cost.slowdown > 1.2  # 27 GB of gradients over PCIe each micro-step, CPU Adam while the GPU waits
    trainable = sc.arch.params
    # gradients out and back every micro-step (accumulating on the host) and the weights back once a step
    micro_batches = speed.default_accumulation(sc, 1)
    assert cost.pcie_bytes_per_step == pytest.approx(trainable * 2 * (2 * micro_batches + 1))
    assert cost.pcie_gbs == 24.0  # PCIe 4.0 x16 as NCCL counts it
    assert cost.cpu_seconds_per_step > trainable * 2 / 24e9  # CPU Adam on top of the weights' transfer
    assert not cost.parameters_offloaded


def test_offload_time_and_bytes_grow_with_model_size_and_the_slowdown_does_not_shrink() -> None:
    costs = [speed.offload_cost(scenario("full", params_b=b, sharding="zero2", offload=True), "H100 SXM", 8)
             for b in (7, 13, 34, 70)]
    for small, big in itertools.pairwise(costs):
        assert big.pcie_bytes_per_step > 1.5 * small.pcie_bytes_per_step
        assert big.cpu_seconds_per_step > 1.5 * small.cpu_seconds_per_step
    # compute per optimizer step grows with the model too: the slowdown holds its size, it does not fall
    assert costs[-1].slowdown >= 0.97 * costs[0].slowdown > 1.5


def test_offload_slowdown_falls_with_pcie_bandwidth(monkeypatch: pytest.MonkeyPatch) -> None:
    sc = scenario("full", sharding="zero3", offload=True)  # parameter offload: weights stream in every pass
    with_slow = speed.offload_cost(sc, "RTX 4090", 1)  # NCCL's 24 GB/s for PCIe 4.0 x16
    with_pcie_gen4(monkeypatch, 48.0)
    with_fast = speed.offload_cost(sc, "RTX 4090", 1)
    assert with_fast.parameters_offloaded
    assert with_fast.slowdown < with_slow.slowdown
    assert with_fast.pcie_bytes_per_step == with_slow.pcie_bytes_per_step
    assert with_fast.transfer_seconds_per_step == pytest.approx(with_slow.transfer_seconds_per_step / 2)


def test_parameter_offload_moves_far_more_than_optimizer_offload() -> None:
    optimizer_only = speed.offload_cost(scenario("full", sharding="zero2", offload=True), "A100", 4)
    # ZeRO-3 `offload` offloads the parameters where the stack's preset does (ms-swift zero3_offload.json; the
    # default stack's, as the DeepSpeed config this tool writes, offloads both): the 16-bit shards stream in
    with_params = speed.offload_cost(scenario("full", sharding="zero3", offload=True, framework="ms-swift"), "A100", 4)
    ours = speed.offload_cost(scenario("full", sharding="zero3", offload=True), "A100", 4)
    assert ours.parameters_offloaded and ours.pcie_bytes_per_step > 2 * optimizer_only.pcie_bytes_per_step
    assert with_params.pcie_bytes_per_step > 2 * optimizer_only.pcie_bytes_per_step
    assert with_params.seconds_per_step > optimizer_only.seconds_per_step


def test_lora_offload_is_cheap_because_few_parameters_train() -> None:
    lora = speed.offload_cost(scenario("lora", sharding="zero2", offload=True), "A100", 1)
    full = speed.offload_cost(scenario("full", sharding="zero2", offload=True), "A100", 1)
    assert lora.slowdown < 1.1 < full.slowdown


# ---- communication: NVLink, PCIe, the network --------------------------------------------------------------


def test_zero3_over_pcie_is_slower_than_over_nvlink() -> None:
    sc = scenario("full", sharding="zero3")
    nvlink = speed.communication_cost(sc, "A100 80GB SXM", 8)
    pcie = speed.communication_cost(sc, "A100 80GB PCIe", 8)  # same chip and peak, NVLink only in pairs
    assert (nvlink.link, pcie.link) == ("nvlink", "pcie")
    assert pcie.bus_gbs < nvlink.bus_gbs / 5
    assert pcie.bytes_per_step == pytest.approx(nvlink.bytes_per_step)
    assert pcie.slowdown > nvlink.slowdown > 1.0
    assert (speed.training_time(sc, "A100 80GB PCIe", 8).tokens_per_second
            < speed.training_time(sc, "A100 80GB SXM", 8).tokens_per_second)


def test_zero3_gathers_the_weights_each_pass_and_deepspeed_again_for_the_recompute() -> None:
    n = 8
    share = (n - 1) / n
    p = scenario().arch.params
    fsdp = speed.step_time(scenario("lora", sharding="fsdp"), "H100", n, accumulation=1)
    zero3 = speed.step_time(scenario("lora", sharding="zero3"), "H100", n, accumulation=1)
    trainable = speed.trainable_params(scenario("lora"))
    assert trainable == pytest.approx(8 * 32 * 78080)  # r · Σ(in + out) over q k v o gate up down, 32 layers
    assert fsdp.collective_bytes == pytest.approx(share * (2 * p * 2 + trainable * 2))
    assert zero3.collective_bytes == pytest.approx(share * (3 * p * 2 + trainable * 2))
    qlora = speed.step_time(scenario("qlora", sharding="fsdp"), "H100", n, accumulation=1)
    assert qlora.collective_bytes < fsdp.collective_bytes / 3  # FSDP-QLoRA gathers the 4-bit storage


def test_one_gpu_has_no_communication() -> None:
    cost = speed.communication_cost(scenario("full", sharding="zero3"), "H100", 1)
    assert cost.bytes_per_step == 0 and cost.slowdown == 1.0


def test_a_second_node_adds_an_inter_node_term() -> None:
    sc = scenario("full", model="Llama-3.1-70B", sharding="zero3")
    inside = speed.multi_node_cost(sc, "A100 80GB SXM", 8)
    assert inside.nodes == 1 and inside.slowdown == 1.0 and inside.network_bytes_per_step == 0
    two = speed.multi_node_cost(sc, "A100 80GB SXM", 16)
    assert two.nodes == 2 and two.gpus_per_node == 8
    assert two.network_bytes_per_step > 0 and two.network_seconds_per_step > 0
    assert two.bus_gbs == min(two.intra_node_gbs, two.node_network_gbs) < two.intra_node_gbs
    assert two.slowdown > 1.0
    one_node = speed.training_time(sc, "A100 80GB SXM", 8)
    two_nodes = speed.training_time(sc, "A100 80GB SXM", 16)
    assert two_nodes.tokens_per_second_per_gpu < one_node.tokens_per_second_per_gpu


def test_a_slow_network_costs_more_than_a_rail_optimised_one() -> None:
    sc = scenario("full", model="Llama-3.1-70B", sharding="zero3")
    h100 = speed.multi_node_cost(sc, "H100 SXM", 16)  # 8 x 400 Gb/s per node
    rtx = speed.multi_node_cost(sc, "RTX 4090", 16)  # one 100 Gb/s NIC per node (assumption)
    assert h100.node_network_gbs == pytest.approx(384.0) and rtx.node_network_gbs == pytest.approx(12.0)
    assert h100.slowdown >= 1.0  # ring latency over the network, bandwidth at the NVLink rate
    assert rtx.slowdown > h100.slowdown + 0.2


def test_nccl_bandwidths_from_the_catalog_interconnect() -> None:
    gbs = {name: speed.intra_node_gbs(find_gpu(name)) for name in ("A100 80GB SXM", "H100 SXM", "B200",  # type: ignore[arg-type]
                                                                  "RTX 4090", "RTX 5090", "T4")}
    assert gbs["A100 80GB SXM"] == pytest.approx(240, rel=0.05)  # NCCL: 12 NVLink3 x 20.0 GB/s
    assert gbs["H100 SXM"] == pytest.approx(371, rel=0.05)  # 18 NVLink4 x 20.6
    assert gbs["B200"] == pytest.approx(722, rel=0.05)  # 18 NVLink5 x 40.1
    assert (gbs["RTX 4090"], gbs["RTX 5090"], gbs["T4"]) == (24.0, 48.0, 12.0)  # PCIe Gen4, Gen5, Gen3 x16


# ---- methods --------------------------------------------------------------------------------------------------


def test_lora_needs_fewer_flops_per_token_than_full_and_is_faster_where_full_must_shard_or_offload() -> None:
    full_flops, _ = speed.training_flops_per_token(scenario("full"))
    lora_flops, _ = speed.training_flops_per_token(scenario("lora"))
    assert lora_flops < 0.8 * full_flops  # 6 · P against 8 · P with checkpointing: no weight gradients
    for gpu, count in (("A100", 1), ("H100", 1), ("RTX 4090", 1)):  # 7B full fine-tuning needs offload alone
        full = speed.training_time(scenario("full", sharding="zero2", offload=True), gpu, count)
        lora = speed.training_time(scenario("lora"), gpu, count)
        assert lora.tokens_per_second > full.tokens_per_second, gpu
    for gpu in ("A100 80GB PCIe", "RTX 4090"):  # several PCIe GPUs: full shards its weights, LoRA does not
        full = speed.training_time(scenario("full", sharding="zero3"), gpu, 4)
        lora = speed.training_time(scenario("lora", sharding="ddp"), gpu, 4)
        assert lora.tokens_per_second > full.tokens_per_second, gpu


def test_lora_compute_is_the_base_models_matmuls_and_its_adapters_a_memory_bound_extra() -> None:
    full = speed.step_time(scenario("full", batch_size=4), "A100", 1, accumulation=1)
    lora = speed.step_time(scenario("lora", batch_size=4), "A100", 1, accumulation=1)
    assert lora.compute < 0.8 * full.compute and full.adapters == 0 < lora.adapters
    h100 = speed.step_time(scenario("lora", batch_size=4), "H100", 1, accumulation=1)
    # the H100 computes 3.2x faster but reads memory only 1.6x faster: adapters weigh more there (S15)
    assert h100.adapters / h100.total > lora.adapters / lora.total


def test_invalid_step_requests_are_rejected() -> None:
    with pytest.raises(ValueError, match="accumulation"):
        speed.step_time(scenario(), "A100", 1, accumulation=0)
    with pytest.raises(ValueError, match="count"):
        speed.offload_cost(scenario(offload=True), "A100", 0)
    with pytest.raises(ValueError, match="unknown GPU"):
        speed.multi_node_cost(scenario(), "Voodoo 3", 16)


# ---- the published runs ----------------------------------------------------------------------------------------


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("speed_accuracy", ROOT / "bench" / "speed_accuracy.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_every_published_run_names_a_catalog_gpu_and_a_source() -> None:
    data = tomllib.loads((ROOT / "engine" / "catalog" / "speed_measured.toml").read_text())
    for block in data["set"]:
        assert block["source"] in data["sources"]
        for row in block["runs"]:
            assert find_gpu(row["gpu"]) is not None, row
            assert row["method"] in ("full", "lora", "qlora")
            assert ("tokens_per_s" in row) != ("step_s" in row), row


def test_the_model_tracks_the_published_runs_of_the_stacks_it_describes() -> None:
    bench = _bench()
    runs, _ = bench.load_runs()
    by_method: dict[str, list[float]] = {}
    for run in runs:
        if run.scored and "(" not in run.group:
            by_method.setdefault(run.group, []).append(bench.predict_after(run) / run.measured - 1)
    assert set(by_method) == {"full", "lora", "qlora"}
    for method in ("full", "lora"):
        errors = by_method[method]
        assert statistics.median(abs(e) for e in errors) < 0.25, method
        assert abs(statistics.median(errors)) < 0.10, method  # no systematic bias either way
