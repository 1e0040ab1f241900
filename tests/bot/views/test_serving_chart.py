"""The serving chart: a real PNG sized for a phone, the serving verdict as its title, one stacked bar per card of each
arrangement (weights, activation peak, non-torch + CUDA graphs, KV pool) against the card and the engine's share of
it, the count and parallelism under each bar, every text ≥ 24 px, DejaVu Sans."""

from __future__ import annotations

import io

import pytest
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.text import Text

from bot.views.chart import DPI, FONT, chart_png
from bot.views.serving_chart import bars, serving_figure
from bot.views.serving_view import serving_view
from engine.answer import answer
from engine.parse import parse
from engine.schema import ServingAnswer

QUESTIONS = {
    "searched": "Llama 3.1 70B on vLLM for 32 users at 8k?",
    "asked_too_small": "Llama 3.1 70B vLLM 128 users 8k on 4xH100",
    "ollama": "Llama 3.1 8B on ollama",
    "moe": "Qwen3-30B-A3B vLLM 64 users 16k",
}


def asked(key: str) -> ServingAnswer:
    a = answer(parse(QUESTIONS[key]))
    assert isinstance(a, ServingAnswer)
    return a


def drawn(fig: Figure) -> list[Text]:
    fig.canvas.draw()
    return [t for t in fig.findobj(Text) if t.get_text() and t.get_visible()]


@pytest.mark.parametrize("key", QUESTIONS)
@pytest.mark.parametrize("lang", ["en", "ru"])
def test_png_sized_for_a_phone_and_readable(key: str, lang: str) -> None:
    a = asked(key)
    data = chart_png(a, lang)
    from PIL import Image

    image = Image.open(io.BytesIO(data))
    assert image.size == (1080, 1350)
    assert sum(image.convert("L").histogram()[:128]) > 20_000  # bars and text, not a blank page
    fig = serving_figure(a, lang)
    texts = drawn(fig)
    sizes = {t.get_text(): t.get_fontsize() * DPI / 72 for t in texts}
    assert min(sizes.values()) >= 24, {k: v for k, v in sizes.items() if v < 24}
    assert {t.get_fontfamily()[0] for t in texts} == {FONT}


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_the_serving_verdict_is_the_title(lang: str) -> None:
    a = asked("searched")
    fig = serving_figure(a, lang)
    title = fig.texts[0].get_text().replace("\n", " ")
    assert title == serving_view(lang, a).headline.replace("\n", " ")
    assert title.startswith("32 users at 8k on" if lang == "en" else "32 пользователя с контекстом 8k на")


def test_each_arrangement_is_a_bar_of_its_parts_against_its_card() -> None:
    a = asked("searched")
    r = a.serving
    assert r is not None and r.memory is not None and r.gpu is not None and r.arrangement is not None
    cols = bars("en", a)
    assert len(cols) >= 3 and len({c.label for c in cols}) == len(cols)
    first = cols[0]
    assert first.label.startswith(f"{r.gpu.count}×") and "TP" in first.label
    assert first.weights == pytest.approx(r.memory.weights_gib) and first.kv_pool == pytest.approx(r.memory.kv_pool_gib)
    assert first.capacity == pytest.approx(r.gpu.total_gib)
    assert first.budget == pytest.approx(r.gpu.total_gib * 0.9, rel=1e-3)  # gpu_memory_utilization × capacity
    for c in cols:  # the parts an engine holds stay within its share; graphs outside it are drawn above
        assert c.weights + c.activation + c.non_torch + c.kv_pool <= c.budget + 0.05
        assert c.room >= 32 and c.fits  # every other GPU shown serves the asked users
    fig = serving_figure(a, "en")
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert ticks[0].endswith(f"{first.room} at once")
    legend = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
    m = r.memory
    assert not m.cuda_graphs_in_budget  # the latest vLLM V1 captures the graphs beyond gpu_memory_utilization
    assert legend[:5] == [f"CUDA graphs (beyond the engine's share): {round(m.cuda_graph_gib, 1)}", "KV pool: 103.1",
                          f"non-torch memory: {round(m.non_torch_gib, 1)}", "activation peak: 1.9", "weights: 65.7"]
    assert legend[-1] == "0.9 × card memory (gpu_memory_utilization)"
    stacked = [p for p in fig.axes[0].patches if isinstance(p, Rectangle) and p.get_facecolor()[:3] != (1, 1, 1)]
    assert len(stacked) >= 4 * len(cols)


def test_a_gpu_too_small_for_the_users_is_drawn_red_beside_one_that_serves() -> None:
    a = asked("asked_too_small")
    cols = bars("en", a)
    assert not cols[0].fits and cols[0].label.startswith("4×H100 SXM")
    assert any(c.fits and c.room >= 128 for c in cols[1:])


def test_llama_cpp_has_no_engine_share_line() -> None:
    fig = serving_figure(asked("ollama"), "en")
    legend = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
    assert legend and not any("gpu_memory_utilization" in x for x in legend)
    assert not any(x.startswith("non-torch") for x in legend)  # nothing of it on llama.cpp: not listed


def test_an_unanswerable_serving_question_is_not_drawn() -> None:
    a = answer(parse("Llama 3.1 8B vLLM context 1000000"))
    assert isinstance(a, ServingAnswer) and a.serving.memory is None
    with pytest.raises(AssertionError):
        bars("en", a)


def test_sglang_draws_its_activations_above_its_share_which_holds_weights_and_kv() -> None:
    a = answer(parse("Gemma 3 27B on SGLang fp8 on 2xH200 for 64 users 16k"))
    for c in bars("en", a):
        assert c.weights + c.non_torch + c.kv_pool <= c.budget + 0.05  # mem_fraction_static: weights + KV (+ held)
    fig = serving_figure(a, "en")
    legend = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
    kv = next(i for i, x in enumerate(legend) if x.startswith("KV pool"))
    act = next(i for i, x in enumerate(legend) if x.startswith("activation peak"))
    assert act < kv  # listed top-down: above the KV pool
    assert legend[-1] == "the engine's share of the card (mem_fraction_static)"  # SGLang's share falls with TP
