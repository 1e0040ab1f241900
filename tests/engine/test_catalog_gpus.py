"""The GPU catalog's own rules (engine/catalog/gpus.toml): every row is sourced and complete, its capabilities agree
with its compute capability, every card sits in a time-model class, the cards people ask about are in it with the
spellings they use, and the parser's short list of cards without figures holds none the catalog has."""

from __future__ import annotations

import re
import tomllib
from collections import Counter

import pytest

from engine.catalog import HERE, data_file, find_gpu, gpus
from engine.parse import parse
from engine.parse.gpus import EXTRA_GPUS
from engine.speed import gpu_class

ROWS = data_file("gpus.toml")["gpu"]


def test_every_row_names_a_source_and_its_figures() -> None:
    for row in ROWS:
        assert len(row["source"]) > 20, row["name"]
        for key in ("memory_gb", "bandwidth_tbs", "bf16_dense_tflops"):
            assert row[key] > 0, (row["name"], key)
        assert row["interconnect"], row["name"]
        if row["vendor"] != "Apple":
            assert (row.get("compute_capability") is None) == (row["vendor"] == "AMD"), row["name"]
    # Apple publishes few FP32 figures and the H20's is not sourced; every other row carries one
    apple = {r["name"] for r in ROWS if r["vendor"] == "Apple"}
    assert {r["name"] for r in ROWS if not r.get("fp32_tflops")} == apple | {"H20"}


def test_names_and_aliases_lead_to_one_card_each() -> None:
    def key(text: str) -> str:
        return "".join(ch for ch in text.lower() if ch.isalnum())

    names = Counter(key(r["name"]) for r in ROWS)
    assert max(names.values()) == 1
    owners: dict[str, set[str]] = {}
    for row in ROWS:
        for alias in row["aliases"]:
            owners.setdefault(key(alias), set()).add(row["name"])
    assert {a: o for a, o in owners.items() if len(o) > 1} == {}


def test_capabilities_follow_the_compute_capability() -> None:
    """bf16 and FlashAttention-2 from sm80 on; bitsandbytes' NF4 needs cc 6.0+ (every NVIDIA row has it)."""
    for g in gpus():
        if g.compute_capability is None:
            continue
        cc = float(g.compute_capability)
        assert g.bf16 == (cc >= 8.0), g.name
        assert g.flash_attention_2 == (cc >= 8.0), g.name
        assert g.bitsandbytes and cc >= 6.0, g.name
        if g.fp8_tflops:
            assert cc >= 8.9, g.name  # Ada, Hopper, Blackwell


def test_geforce_rows_take_the_fp32_accumulate_half_rate() -> None:
    """Ampere/Ada/Blackwell GeForce: dense BF16 (FP32 accumulate) = 2 x FP32, as the RTX 3090 (71 of 35.6) and
    RTX 4090 (165.2 of 82.6) rows; the workstation boards run it at full rate, 4 x FP32."""
    for row in ROWS:
        name = row["name"]
        if not re.match(r"RTX [345]0[5-9]0", name) or float(row["compute_capability"]) < 8.0:
            continue
        assert row["bf16_dense_tflops"] == pytest.approx(2 * row["fp32_tflops"], rel=0.01), name
    for name in ("RTX A4000", "RTX A4500", "RTX 4500 Ada", "RTX 5000 Ada", "RTX PRO 6000 Blackwell", "A40"):
        row = next(r for r in ROWS if r["name"] == name)
        assert row["bf16_dense_tflops"] == pytest.approx(4 * row["fp32_tflops"], rel=0.02), name


def test_every_card_is_in_a_time_model_class() -> None:
    """A card outside every class would be timed at the `default` utilisation; only Apple Silicon is."""
    loose = {g.name for g in gpus() if gpu_class(g) == "default"}
    assert loose == {g.name for g in gpus() if g.vendor == "Apple"} | {"H20"}
    listed = [n for members in data_file("speed.toml")["classes"].values() for n in members]
    assert len(listed) == len(set(listed)) and set(listed) <= {g.name for g in gpus()}


def test_the_fitted_utilisation_rests_on_measured_runs_of_those_gpus() -> None:
    with (HERE / "speed_measured.toml").open("rb") as f:
        measured = Counter(r["gpu"] for block in tomllib.load(f)["set"] for r in block["runs"])
    for name in data_file("speed.toml")["utilisation_fitted"]["gpus"]:
        assert measured[name] >= 50, name


@pytest.mark.parametrize(("said", "name"), [
    ("3060", "RTX 3060"), ("rtx 3060", "RTX 3060"), ("RTX 3060 12GB", "RTX 3060"), ("3060 8gb", "RTX 3060 8GB"),
    ("3070", "RTX 3070"), ("3080", "RTX 3080"), ("3080 12gb", "RTX 3080 12GB"), ("3080 ti", "RTX 3080 Ti"),
    ("3090 ti", "RTX 3090 Ti"), ("4060ti 16gb", "RTX 4060 Ti 16GB"), ("4070", "RTX 4070"),
    ("4070 ti super", "RTX 4070 Ti Super"), ("4080", "RTX 4080"), ("4080 super", "RTX 4080 Super"),
    ("5070 ti", "RTX 5070 Ti"), ("5080", "RTX 5080"), ("2080 ti", "RTX 2080 Ti"), ("a40", "A40"), ("a30", "A30"),
    ("l40", "L40"), ("l40s", "L40S"), ("l20", "L20"), ("a800", "A800 80GB SXM"), ("h800", "H800"),
    ("rtx 4000 ada", "RTX 4000 Ada"), ("rtx 5000 ada", "RTX 5000 Ada"), ("a4000", "RTX A4000"),
    ("a4500", "RTX A4500"), ("rtx pro 6000", "RTX PRO 6000 Blackwell"), ("p100", "P100"), ("p40", "P40"),
    ("mi210", "MI210"), ("7900 xtx", "RX 7900 XTX"), ("rtx 6000", "Quadro RTX 6000"), ("6000 ada", "RTX 6000 Ada"),
])
def test_the_cards_people_ask_about_are_in_the_catalog(said: str, name: str) -> None:
    gpu = find_gpu(said)
    assert gpu is not None and gpu.name == name
    asked = parse(f"lora 8b на {said}").gpus  # the parser reads it as the catalog card (its aliases kept)
    assert asked is not None and [g.name for g in asked] == [name]


def test_a_size_said_picks_the_variant() -> None:
    assert find_gpu("RTX 4060 Ti", 16).name == "RTX 4060 Ti 16GB"  # type: ignore[union-attr]
    assert find_gpu("RTX 3080", 12).name == "RTX 3080 12GB"  # type: ignore[union-attr]
    assert find_gpu("A800", 40).name == "A800 40GB PCIe"  # type: ignore[union-attr]
    assert find_gpu("P100", 12).name == "P100 12GB"  # type: ignore[union-attr]


def test_the_parsers_extra_cards_are_the_ones_without_figures() -> None:
    for name, _sizes, aliases in EXTRA_GPUS:
        assert find_gpu(name) is None, name
        assert all(find_gpu(a) is None for a in aliases), name
