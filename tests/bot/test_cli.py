"""The command-line contract: one JSON line per input line, errors as objects, exit 0."""

from __future__ import annotations

import json

import pytest
from cli_support import Ran, run_cli


def run(*args: str, stdin: str | bytes = "") -> Ran:
    return run_cli(*args, stdin=stdin)  # in process: bot.cli.main(argv) with its streams captured


def test_estimate_request_answers_every_line_in_order() -> None:
    lines = [
        json.dumps({"model": {"params_b": 7}, "method": "qlora"}),
        "{not json",
        "",
        json.dumps({"model": {"params_b": 1e100}}),
        json.dumps({"model": {"name": "Llama-3.1-8B"}, "method": "inference", "seq_len": 8192}),
        "\x00\x01 garbage",
    ]
    p = run("estimate", "--json", "--request", stdin="\r\n".join(lines) + "\n")
    assert p.returncode == 0, p.stderr
    out = [json.loads(line) for line in p.stdout.splitlines()]
    assert len(out) == len(lines)
    assert out[0]["per_gpu"]["total"] > 0 and out[0]["request"]["method"] == "qlora"
    assert "error" in out[1] and "error" in out[2] and "error" in out[3] and "error" in out[5]
    assert out[4]["per_gpu"]["kv_cache"] > 0
    assert "Traceback" not in p.stderr


def test_fits_lists_every_catalog_gpu_when_none_named() -> None:
    p = run("estimate", "--json", "--request", stdin=json.dumps({"model": {"params_b": 7}}) + "\n")
    answer = json.loads(p.stdout)
    assert len(answer["fits"]) >= 29
    assert {"gpu", "memory_gb", "count", "fits", "headroom_gb"} <= set(answer["fits"][0])


def test_bad_flag_exits_2() -> None:
    assert run("estimate", "--no-such-flag").returncode == 2


def test_ask_prices_in_roubles_with_own_prices_and_rejects_a_malformed_price_flag() -> None:
    out = run("ask", "--currency", "RUB", "--price", "H100=900", "8B LoRA на H100")
    assert out.returncode == 0 and "900\u00a0₽/ч" in out.stdout
    assert run("ask", "--price", "H100", "8B LoRA").returncode == 2
    noted = run("ask", "--price", "H100=-1", "8B LoRA on H100")
    assert noted.returncode == 0 and "your price -1 for H100 is not usable" in noted.stdout


def test_estimate_counts_the_cuda_context_in_the_fit() -> None:
    import json

    out = json.loads(run("estimate", "--json", "37B inference on H100").stdout)
    fit, per_gpu = out["fits"][0], out["per_gpu"]
    # against the 79.19 GiB the driver reports for an "80 GB" H100, with the CUDA context on top of the peak
    assert fit["fits"] and fit["headroom_gb"] == pytest.approx(79.19 - per_gpu["total"] - per_gpu["cuda_context"],
                                                               abs=0.01)
    over = json.loads(run("estimate", "--json", "40B inference on H100").stdout)["fits"][0]
    assert over["fits"] is False and over["headroom_gb"] < 0


def test_ask_from_stdin_answers_each_line_with_one_json_object() -> None:
    import json

    out = run("ask", "--format", "html", stdin="70B QLoRA на H100?\n\n<b>x</b>\n")
    lines = out.stdout.splitlines()
    assert out.returncode == 0 and len(lines) == 3
    answers = [json.loads(line)["answer"] for line in lines]
    assert answers[0].startswith("✅ <b>Помещается") and "<pre>" in answers[0]
    assert "<b>x</b>" not in answers[2]


def test_estimate_carries_the_v2_verdict_and_the_cluster_total() -> None:
    lines = [
        json.dumps({"model": {"name": "Llama-3.1-8B"}, "method": "qlora",
                    "gpus": [{"name": "H100 SXM", "memory_gb": 80, "count": 1}]}),
        json.dumps({"model": {"params_b": 70}, "method": "full",
                    "gpus": [{"name": "RTX 4090", "memory_gb": 24, "count": 2}]}),
        json.dumps({"model": {"params_b": 7}, "method": "lora"}),
    ]
    p = run("estimate", "--json", "--request", stdin="\n".join(lines) + "\n")
    small, huge, unnamed = (json.loads(line) for line in p.stdout.splitlines())
    assert small["verdict"] == "fits"
    assert huge["verdict"] in ("no_fit", "fits_with_changes") and huge["verdict"] != "fits"
    assert unnamed["verdict"] is None
    per_gpu = huge["per_gpu"]["total"] + huge["per_gpu"]["cuda_context"]
    assert abs(huge["cluster_total_gib"] - 2 * per_gpu) < 0.01
