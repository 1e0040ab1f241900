"""The memory chart: a real PNG sized for a phone, the verdict as its title, the components stacked per card
against each arrangement's capacity, every text readable (≥ 24 px at 1080 px), Cyrillic in a shipped font."""

from __future__ import annotations

import io
import struct
import subprocess
import sys
from pathlib import Path

import answer_fixtures as fx
import matplotlib
import pytest
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties, findfont
from matplotlib.ft2font import FT2Font
from matplotlib.patches import Rectangle
from matplotlib.text import Text

from bot.views.chart import DPI, FONT, capacity_lines, chart_figure, chart_png, columns
from engine.schema import TrainingAnswer

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SCENARIOS = {
    "qlora_70b": fx.answer,  # 70B QLoRA on an H100
    "inference_8b": fx.inference,  # Llama 3.1 8B served
    "full_7b": fx.full,  # full fine-tuning of 7B
    "lora_8b_4090": fx.no_fit,  # LoRA Llama 3.1 8B on a 4090, 8k context
    "compare": fx.comparison,  # A100 against H100 against RTX 3060
}


def planned(key: str) -> TrainingAnswer:
    return SCENARIOS[key]()


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def drawn_texts(fig: Figure) -> list[Text]:
    return [t for t in fig.findobj(Text) if t.get_text() and t.get_visible()]


def texts(fig: Figure) -> list[str]:
    return [t.get_text().replace("\u00a0", " ") for t in drawn_texts(fig)]


def legend_labels(fig: Figure) -> list[str]:
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


def title(fig: Figure) -> str:
    return fig.texts[0].get_text().replace("\n", " ").replace("\u00a0", " ")


@pytest.mark.parametrize("key", SCENARIOS)
@pytest.mark.parametrize("lang", ["en", "ru"])
def test_png_sized_for_a_phone(key: str, lang: str) -> None:
    data = chart_png(planned(key), lang)
    assert png_size(data) == (1080, 1350)
    assert 20_000 < len(data) < 400_000
    from PIL import Image

    image = Image.open(io.BytesIO(data)).convert("L")
    dark = sum(image.histogram()[:128])  # not blank: bars and text leave plenty of dark pixels
    assert dark > 20_000


@pytest.mark.parametrize("key", SCENARIOS)
@pytest.mark.parametrize("lang", ["en", "ru"])
def test_every_text_is_readable_on_a_phone(key: str, lang: str) -> None:
    fig = chart_figure(planned(key), lang)
    fig.canvas.draw()  # tick labels exist once drawn
    sizes = {t.get_text(): t.get_fontsize() * DPI / 72 for t in drawn_texts(fig)}
    assert len(sizes) > 10 and min(sizes.values()) >= 24, {k: v for k, v in sizes.items() if v < 24}
    width = fig.get_figwidth() * DPI
    assert width == 1080


def test_the_font_is_shipped_with_matplotlib_and_has_cyrillic() -> None:
    path = Path(findfont(FontProperties(family=FONT), fallback_to_default=False))
    assert Path(matplotlib.get_data_path()) in path.parents and path.name == "DejaVuSans.ttf"
    font = FT2Font(str(path))
    assert all(font.get_char_index(ord(c)) for c in "ЁёЖжЩщЫыЮюЯя«»—₽")


@pytest.mark.parametrize(("lang", "verdict"), [("ru", "Помещается на 1×H100 SXM: 58,9 ГБ, доступно 79,2 из 80 ГБ"),
                                               ("en", "Fits on 1×H100 SXM: 58.9 GB, 79.2 of 80 GB available")])
def test_the_verdict_is_the_title(lang: str, verdict: str) -> None:
    assert title(chart_figure(fx.answer(), lang)) == verdict


def test_a_question_about_money_still_has_the_verdict_as_title() -> None:
    a = fx.answer(request=fx.Request(asks=["money"]))
    assert title(chart_figure(a, "en")) == "Fits on 1×H100 SXM: 58.9 GB, 79.2 of 80 GB available"
    assert title(chart_figure(fx.no_fit(), "ru")) == (
        "Не помещается на 1×RTX 4090: нужно 51,2 ГБ, доступно 23,7 из 24 ГБ")


def test_russian_legend_and_axis() -> None:
    fig = chart_figure(planned("qlora_70b"), "ru")
    labels = legend_labels(fig)
    for name in ("веса", "адаптеры", "активации", "резерв PyTorch", "служебная память CUDA"):
        assert any(label.startswith(name + ": ") for label in labels), name
    assert not any(label.startswith("KV") for label in labels)  # no KV cache in training
    assert fig.axes[0].get_ylabel() == "ГБ на карту"
    assert "70B · QLoRA 4 бита r16 · контекст 2k · батч 1" in texts(fig)
    assert any("," in label.split(": ")[1] for label in labels)  # decimal commas


def test_english_inference_chart() -> None:
    fig = chart_figure(planned("inference_8b"), "en")
    labels = legend_labels(fig)
    assert any(label.startswith("weights: ") for label in labels)
    assert any(label.startswith("KV cache: ") for label in labels)
    assert not any(label.startswith(("gradients", "optimizer", "adapters")) for label in labels)
    assert fig.axes[0].get_ylabel() == "GB per card"


def test_each_arrangement_is_a_column_with_its_count_against_its_cards_capacity() -> None:
    a = fx.no_fit()  # 1×RTX 4090 asked (does not fit), 4×RTX 4090 with ZeRO-3 planned
    cols = columns(a, "en")
    assert [(c.label, c.capacity, c.fits) for c in cols] == [("1×RTX 4090", 24.0, False), ("4×RTX 4090", 24.0, True)]
    assert cols[0].stacked and cols[0].used == a.need_gb
    assert not cols[1].stacked and cols[1].used == pytest.approx(58.5 + 0.4)  # its plan's own per-card figure
    fig = chart_figure(a, "en")
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert ticks == ["1×RTX\n4090", "4×RTX\n4090"] or ticks == ["1×RTX 4090", "4×RTX 4090"]
    assert "24 GB" in texts(fig) and "per card, split another way" in legend_labels(fig)
    compared = [c.label for c in columns(fx.comparison(), "en")]
    assert compared == ["1×A100 80GB SXM", "1×H100 SXM", "1×RTX 3060"]


def test_the_stack_holds_the_nonzero_components_in_order() -> None:
    a = planned("qlora_70b")
    fig = chart_figure(a, "en")
    ax = fig.axes[0]
    b = a.breakdown
    assert b is not None
    expected = [v for v in (b.weights, b.adapters, b.gradients, b.optimizer, b.activations, b.logits, b.kv_cache,
                            b.overhead, b.cuda_context) if v >= 0.05]
    # column 0 (1×H100 SXM): its capacity box twice (fill, outline), then the components bottom-up
    at_zero = [p for p in ax.patches if isinstance(p, Rectangle) and abs(p.get_x() + p.get_width() / 2) < 1e-9]
    boxes = [p for p in at_zero if p.get_height() == 80.0]
    stack = [p for p in at_zero if p not in boxes]
    assert len(boxes) == 2 and [p.get_height() for p in stack] == pytest.approx(expected)
    assert stack[0].get_y() == 0 and stack[1].get_y() == pytest.approx(expected[0])
    assert ax.get_ylim()[1] > max(a.need_gb, sum(expected), 80.0)


def test_without_an_arrangement_the_need_is_drawn_against_familiar_gpus() -> None:
    a = fx.full(405, 8600.0)
    assert columns(a, "en") == []
    lines = capacity_lines(a)
    assert lines and all(m < a.need_gb and not fits for m, _names, fits in lines)
    fig = chart_figure(a, "ru")
    assert any(t.startswith("H200 SXM: 141 ГБ") for t in texts(fig))
    assert title(fig) == "Всего нужно 8 600,4 ГБ видеопамяти"  # a total, not per GPU: no arrangement is named


def test_capacity_lines_bracket_the_need() -> None:
    result = planned("lora_8b_4090")
    memories = [m for m, _names, _fits in capacity_lines(result)]
    assert memories == sorted(memories) and len(memories) == len(set(memories)) <= 5
    assert 24.0 in memories and any(m >= result.need_gb for m in memories)
    by_size = {m: names for m, names, _fits in capacity_lines(planned("qlora_70b"))}
    assert "H100 SXM" in by_size[80.0]


def test_deterministic() -> None:
    result = planned("qlora_70b")
    assert chart_png(result, "en") == chart_png(result, "en")


def test_cli_ask_does_not_import_matplotlib() -> None:
    code = ("import sys; from bot.cli import main\n"
            "rc = main(['ask', '70B QLoRA на H100?'])\n"
            "assert 'matplotlib' not in sys.modules, 'matplotlib imported'\nprint('CLEAN', rc)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "H100" in out.stdout  # the answer was really made
    assert "CLEAN 0" in out.stdout
