"""The latency/throughput chart of a serving answer under load: a real PNG sized for a phone, its lines the points of
`serving.load` (TTFT p95 and TPOT against requests in flight, output tokens/s on the second axis), the promise as a
line, the saturation where the KV pool or max_num_seqs binds, the title in the reply's language above the plot."""

from __future__ import annotations

import io
from typing import Any

import pytest
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Text

from bot.views.chart import DPI, FONT
from bot.views.load_chart import load_figure, load_png
from bot.views.serving_view import serving_view
from engine.answer import answer
from engine.parse import parse
from engine.schema import Answer
from engine.serving.loadplan import load_block

QUESTIONS = {
    "rate": "Llama 3.1 70B on vLLM, 20 requests per second, TTFT p95 under 500 ms, 2k prompt 300 output",
    "users_ru": "сколько H100 нужно, чтобы держать 64 пользователя с TTFT p95 под 800 мс на Llama 3.1 8B",
    "tpot": "Qwen2.5 7B on 1 L40S, 16 concurrent users, TPOT 30 ms, TTFT p95 under 1 s",
}


def asked(key: str) -> Answer:
    return answer(parse(QUESTIONS[key]))


def block(a: Answer) -> dict[str, Any]:
    assert a.serving is not None
    b = load_block(a.serving.load)
    assert b is not None
    return b


def line(fig: Figure, label: str) -> Line2D:
    found = [x for ax in fig.axes for x in ax.get_lines() if x.get_label() == label]
    assert len(found) == 1, [x.get_label() for ax in fig.axes for x in ax.get_lines()]
    return found[0]


def drawn(fig: Figure) -> list[Text]:
    fig.canvas.draw()
    return [t for t in fig.findobj(Text) if t.get_text() and t.get_visible()]


@pytest.mark.parametrize("key", QUESTIONS)
def test_png_sized_for_a_phone_readable_and_in_the_reply_language(key: str) -> None:
    lang = "ru" if key.endswith("_ru") else "en"
    a = asked(key)
    data = load_png(a, lang)
    from PIL import Image

    image = Image.open(io.BytesIO(data))
    assert data.startswith(b"\x89PNG") and image.size == (1080, 1350)
    fig = load_figure(a, lang)
    texts = drawn(fig)
    sizes = {t.get_text(): t.get_fontsize() * DPI / 72 for t in texts}
    assert min(sizes.values()) >= 24, {k: v for k, v in sizes.items() if v < 24}
    assert {t.get_fontfamily()[0] for t in texts} == {FONT}
    title = fig.texts[0]
    assert title.get_text().replace("\n", " ") == serving_view(lang, a).headline.replace("\n", " ")
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    for t in fig.texts:  # the title and the summary sit above the plot, not on it
        assert t.get_window_extent(renderer).y0 > fig.axes[0].get_window_extent(renderer).y1
    labels = [x.get_text() for lg in fig.legends for x in lg.get_texts()]
    assert ("задержка, мс" if lang == "ru" else "latency, ms") == fig.axes[0].get_ylabel()
    assert ("TTFT p95, мс" if lang == "ru" else "TTFT p95, ms") in labels


@pytest.mark.parametrize("key", QUESTIONS)
def test_the_lines_are_the_points_of_serving_load(key: str) -> None:
    lang = "ru" if key.endswith("_ru") else "en"
    a = asked(key)
    b = block(a)
    n = b["replicas"]
    curve = [c for c in b["curve"] if c["ttft_p95_ms"] is not None]
    assert len(curve) >= 4
    fig = load_figure(a, lang)
    ttft = line(fig, "TTFT p95, мс" if lang == "ru" else "TTFT p95, ms")
    tpot = line(fig, "TPOT, мс" if lang == "ru" else "TPOT, ms")
    out = line(fig, "выходных токенов/с, все GPU" if lang == "ru" else "output tokens/s, all GPUs")
    assert list(ttft.get_xdata()) == [c["concurrency"] * n for c in curve]
    assert list(ttft.get_ydata()) == [c["ttft_p95_ms"] for c in curve]
    assert list(tpot.get_ydata()) == [c["tpot_ms"] for c in curve]
    assert list(out.get_ydata()) == pytest.approx([c["output_tokens_s"] * n for c in curve])
    assert out.axes is not ttft.axes  # throughput on its own axis
    # the saturation: a vertical line where the KV pool or max_num_seqs binds, for the whole arrangement
    limit = b["saturation_limit"]
    assert limit in ("kv_cache", "max_num_seqs")
    at = b["max_concurrency_per_replica"] * n
    [sat] = [x for x in fig.axes[0].get_lines() if "binds" in str(x.get_label()) or "упор" in str(x.get_label())]
    assert list(sat.get_xdata()) == [at, at]
    assert ("max_num_seqs" in str(sat.get_label())) == (limit == "max_num_seqs")
    # the promise: a horizontal line at the asked TTFT p95 (and TPOT when one was asked)
    promised = [x for x in fig.axes[0].get_lines() if str(x.get_label()).startswith(("promise", "обещание"))]
    targets = sorted(x for x in (b["promise"]["ttft_p95_ms"], b["promise"]["tpot_ms"]) if x)
    assert sorted(x.get_ydata()[0] for x in promised) == targets
    # the load asked, on the TTFT curve's axes
    [star] = [x for x in fig.axes[0].get_lines() if x.get_label() in ("your load", "ваша нагрузка")]
    assert star.get_ydata()[0] == b["ttft_ms"]["p95"]


def test_an_answer_without_load_figures_is_not_drawn() -> None:
    a = answer(parse("Llama 3.1 8B vLLM context 1000000"))
    with pytest.raises(AssertionError):
        load_figure(a, "en")
