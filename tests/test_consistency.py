"""The same question gets the same answer from every door, and an answer agrees with itself: the verdict with
fits[], the breakdown's lines with its total. The CLI runs in-process through bot.cli.main(argv)."""

from __future__ import annotations

import json
import re

import pytest
from bot_harness import Harness
from fake_botapi import FakeBotAPI, message

from bot.cli import main
from bot.views.render import plain
from bot.views.view import TABLE_WIDTH, VERDICT_MARKS

# training, QLoRA, post-training, serving, price: the questions every door is asked
QUESTIONS = [
    "70B QLoRA на H100?",
    "лора 8б на 4090",
    "can I LoRA llama 3.1 8b on a 4090 with 8k context?",
    "full fine-tune Llama 3.1 8B on 8 A100 80GB",
    "QLoRA Qwen2.5-32B on a 4090",
    "Mistral 7B LoRA на 2×3090, контекст 4k",
    "полный файнтюн 70B на 8 H100",
    "QLoRA 8B on RTX 3060 12GB",
    "DPO 8B на 2 4090",
    "DPO Llama-3.1-8B LoRA on one A100 80GB",
    "GRPO Qwen2.5-7B на 8 H20",
    "GRPO Qwen2.5-7B with vLLM on 8 H100",
    "ORPO 8B на H100",
    "vLLM 70B на 2 H100 для 32 пользователей",
    "serve Llama 3.1 8B with vLLM on an L4 for 16 users",
    "SGLang Qwen2.5-32B on 2 A100 80GB, 64 users",
    "vLLM Llama-3.1-8B на 4090 для 8 пользователей, контекст 8k",
    "how much is an H100 per hour?",
    "сколько стоит A100 в час?",
    "how much is a GTX 1080 per hour?",
]
TRAINING_LIKE = QUESTIONS[:13]
SERVING = QUESTIONS[13:17]
PRICE = QUESTIONS[17:]
NOT_A_PART = {"total", "cuda_context", "pressure"}  # per_gpu entries beside the lines (upcast etc. are lines)
ROW = re.compile(r"^(.*\S)\s+(-?\d[\d\u00a0 ]*(?:[.,]\d+)?)$")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    return json.loads(run(capsys, *argv))


def number(text: str) -> float:
    return float(text.replace("\u00a0", "").replace(" ", "").replace(",", "."))


def table(text: str) -> tuple[list[float], float]:
    """The figures of the answer's memory table and its total (the rows between the header and the rule)."""
    lines = text.split("\n")
    rule = next(i for i, line in enumerate(lines) if line.startswith("─" * 10))
    start = rule
    while start > 0 and len(lines[start - 1]) == TABLE_WIDTH and ROW.match(lines[start - 1]):
        start -= 1
    rows = [number(ROW.match(line).group(2)) for line in lines[start:rule]]  # type: ignore[union-attr]
    total = ROW.match(lines[rule + 1])
    assert total, lines[rule + 1]
    return rows, number(total.group(2))


def verdict_of_headline(text: str) -> str | None:
    first = text.lstrip()[:2]
    return next((v for v, mark in VERDICT_MARKS.items() if first.startswith(mark)), None)


# ---- every breakdown adds up ------------------------------------------------------------------------------


@pytest.mark.parametrize("q", TRAINING_LIKE + SERVING)
def test_json_lines_add_up_to_the_total(q: str, capsys: pytest.CaptureFixture[str]) -> None:
    est = cli_json(capsys, "estimate", "--json", q)
    p = est["per_gpu"]
    lines = sum(v for k, v in p.items() if k not in NOT_A_PART)
    assert lines == pytest.approx(p["total"], abs=0.005 * len(p)), p


@pytest.mark.parametrize("q", TRAINING_LIKE + SERVING)
def test_rendered_table_adds_up_to_its_total(q: str, capsys: pytest.CaptureFixture[str]) -> None:
    text = run(capsys, "ask", q)
    rows, total = table(text)
    assert sum(rows) == pytest.approx(total, abs=0.05 * len(rows) + 0.05), text


def test_a_table_whose_peak_holds_less_than_its_lines_adds_up(capsys: pytest.CaptureFixture[str]) -> None:
    """«лора 8б на 4090»: the lines listed once added up to more than «итого»; the peak holds 1,0 less at once
    (the line «освобождено до пика»)."""
    rows, total = table(run(capsys, "ask", "лора 8б на 4090"))
    assert total == pytest.approx(21.7, abs=0.05)
    assert sum(rows) == pytest.approx(total, abs=0.3)
    assert any(r < 0 for r in rows)  # the line "освобождено до пика"


# ---- the verdict agrees with fits[] -------------------------------------------------------------------------


@pytest.mark.parametrize("q", TRAINING_LIKE + SERVING)
def test_verdict_agrees_with_fits(q: str, capsys: pytest.CaptureFixture[str]) -> None:
    est = cli_json(capsys, "estimate", "--json", q)
    if est["verdict"] is None:
        return  # no GPU asked: nothing to agree with
    [asked] = est["fits"] if len(est["fits"]) == 1 else [est["fits"][0]]
    assert asked["fits"] == (est["verdict"] in ("fits", "tight")), est


def test_dpo_on_two_4090_fits_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    est = cli_json(capsys, "estimate", "--json", "DPO 8B на 2 4090")
    assert est["verdict"] in ("fits", "tight") and est["fits"][0]["fits"] is True
    assert est["fits"][0]["headroom_gb"] > 0


# ---- serving: per_gpu is the serving accounting --------------------------------------------------------------


def test_serving_per_gpu_is_the_serving_accounting(capsys: pytest.CaptureFixture[str]) -> None:
    est = cli_json(capsys, "estimate", "--json", "vLLM 70B на 2 H100 для 32 пользователей")
    p, s = est["per_gpu"], est["serving"]
    assert p["weights"] == pytest.approx(s["weights_gib"], abs=0.01)
    assert p["kv_cache"] == pytest.approx(s["kv_pool_gib"], abs=0.01)
    assert p["activations"] == pytest.approx(s["activation_peak_gib"], abs=0.01)
    assert p["total"] + p["cuda_context"] <= s["gpu_total_gib"]  # a vLLM budget, not an HF-generate 112 GiB
    assert not s["fits"] and est["verdict"] in ("fits_with_changes", "no_fit")
    assert est["fits"][0]["fits"] is False and est["fits"][0]["headroom_gb"] < 0


# ---- plan answers what estimate answers ------------------------------------------------------------------


@pytest.mark.parametrize("q", TRAINING_LIKE + SERVING)
def test_plan_answers_every_question_estimate_answers(q: str, capsys: pytest.CaptureFixture[str]) -> None:
    est = cli_json(capsys, "estimate", "--json", q)
    plan = cli_json(capsys, "plan", "--json", q)
    assert "error" not in est and "error" not in plan, (est, plan)
    assert plan["verdict"] == est["verdict"]
    if est["verdict"] is not None:
        assert plan["asked_fits"] == (est["verdict"] in ("fits", "tight"))


def test_price_questions_answer_alike_in_plan_and_ask(capsys: pytest.CaptureFixture[str]) -> None:
    plan = cli_json(capsys, "plan", "--json", "how much is an H100 per hour?")
    assert plan["market"]["gpu"] == "H100 SXM" and plan["market"]["min"] <= plan["market"]["typical"]
    none = cli_json(capsys, "plan", "--json", "how much is a GTX 1080 per hour?")
    assert none == {"error": "no market prices for GTX 1080"}
    assert "no market prices for GTX 1080" in run(capsys, "ask", "how much is a GTX 1080 per hour?")


# ---- no valid question crashes -----------------------------------------------------------------------------


def test_grpo_on_a_gpu_without_a_price_gives_hours(capsys: pytest.CaptureFixture[str]) -> None:
    plan = cli_json(capsys, "plan", "--json", "GRPO Qwen2.5-7B на 8 H20")
    assert plan["plans"] and plan["plans"][0]["hours"] > 0 and plan["plans"][0]["usd"] is None
    assert "internal error" not in run(capsys, "estimate", "--json", "GRPO Qwen2.5-7B на 8 H20")


@pytest.mark.parametrize("command", [["parse"], ["estimate", "--json"], ["plan", "--json"], ["ask"],
                                     ["config", "--json"]])
def test_no_question_crashes_any_subcommand(command: list[str], capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO("\n".join(QUESTIONS).encode())))
    out = run(capsys, *command).strip().split("\n")
    assert len(out) == len(QUESTIONS)
    assert not [q for q, line in zip(QUESTIONS, out, strict=True)
                if "internal error" in line or "something went wrong" in line]


# ---- the same question, the same answer from every door -----------------------------------------------------


async def test_every_door_gives_the_same_answer(h: Harness, api: FakeBotAPI,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    for i, q in enumerate(QUESTIONS):
        asked = run(capsys, "ask", q).rstrip("\n")
        async with h.polling():
            api.push(message(q, user_id=5000 + i, language_code="ru" if re.search("[а-я]", q) else "en"))
            [sent] = await api.wait_for("sendMessage", chat_id=5000 + i)
        assert plain(sent.params["text"]).rstrip("\n") == asked, q  # the bot's reply is `ask`'s, word for word
        if q in PRICE:
            continue
        est = cli_json(capsys, "estimate", "--json", q)
        plan = cli_json(capsys, "plan", "--json", q)
        assert plan["verdict"] == est["verdict"], q
        said = verdict_of_headline(asked)
        if est["verdict"] is not None:
            assert said == est["verdict"], (q, asked[:80])
        _rows, total = table(asked)
        assert total == pytest.approx(est["per_gpu"]["total"] + est["per_gpu"]["cuda_context"], abs=0.06), q


# ---- a config file: the CLI's check and the bot read it alike --------------------------------------------------


def test_check_judges_fit_against_the_driver_reported_capacity(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    from configs_golden_cases import TRL_YAML

    from engine.fit import capacity

    path = tmp_path / "sft.yaml"
    path.write_text(TRL_YAML, encoding="utf-8")
    est = cli_json(capsys, "check", "--json", str(path))["estimate"]
    need = est["per_gpu"]["total"] + est["per_gpu"]["cuda_context"]
    for f in est["fits"]:  # a 32 GB RTX 5090 holds what its driver reports, not its label
        room = capacity(f["gpu"], f["memory_gb"])
        assert f["headroom_gb"] == pytest.approx(room - need, abs=0.011), f
        assert f["fits"] == (need <= room), f


async def test_the_bot_sizes_a_config_file_by_its_model_id_as_check_does(h: Harness, api: FakeBotAPI) -> None:
    from configs_golden_cases import TRL_YAML

    api.add_file("sft", TRL_YAML.encode(), path="documents/sft.yaml")
    doc = {"file_id": "sft", "file_unique_id": "usft", "file_name": "sft.yaml"}
    await h.feed(message(None, user_id=5101, document=doc, caption="on H100"))
    [text] = [c.params["text"] for c in api.of("sendMessage") if int(c.params["chat_id"]) == 5101]
    assert "gives no size" not in text and "typical 0.5B" in text, text  # the size the model id says
    assert verdict_of_headline(text.split("\n\n", 1)[1]) in ("fits", "tight"), text  # 0.5B on an H100
