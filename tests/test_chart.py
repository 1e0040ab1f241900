"""The memory chart: a real PNG of the right size, components in the user's language, GPU lines."""

from __future__ import annotations

import io
import struct
import subprocess
import sys

import answer_fixtures as fx
import pytest
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.text import Text

from bot.views.chart import capacity_lines, chart_figure, chart_png
from engine.schema import Answer

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SCENARIOS = {
    "qlora_70b": fx.answer,  # 70B QLoRA on an H100
    "inference_8b": fx.inference,  # Llama 3.1 8B served
    "full_7b": fx.full,  # full fine-tuning of 7B
    "lora_8b_4090": fx.no_fit,  # LoRA Llama 3.1 8B on a 4090, 8k context
}


def planned(key: str) -> Answer:
    return SCENARIOS[key]()


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def texts(fig: Figure) -> list[str]:
    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def legend_labels(fig: Figure) -> list[str]:
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


@pytest.mark.parametrize("key", SCENARIOS)
@pytest.mark.parametrize("lang", ["en", "ru"])
def test_png_of_the_right_size(key: str, lang: str) -> None:
    result = planned(key)
    data = chart_png(result, lang)
    assert png_size(data) == (800, 500)
    assert 5_000 < len(data) < 200_000
    from PIL import Image

    image = Image.open(io.BytesIO(data)).convert("L")
    # not blank: the bar and the text leave plenty of dark pixels on the white background
    dark = sum(image.histogram()[:128])
    assert dark > 2_000


def test_russian_legend_title_and_axis() -> None:
    result = planned("qlora_70b")
    fig = chart_figure(result, "ru")
    labels = legend_labels(fig)
    assert any(label.startswith("веса: ") for label in labels)
    assert any(label.startswith("адаптеры: ") for label in labels)
    assert any(label.startswith("активации: ") for label in labels)
    assert not any(label.startswith("KV") for label in labels)  # no KV cache in training
    all_text = " ".join(texts(fig))
    assert "Память на GPU: 70B, QLoRA 4 бит, r16" in all_text
    assert fig.axes[0].get_ylabel() == "ГБ"
    assert "пик " in all_text and "H100 SXM" in all_text and "80 ГБ" in all_text
    # Russian number format: a decimal comma in the component values
    assert any("," in label.split(": ")[1] for label in labels)


def test_english_inference_chart() -> None:
    result = planned("inference_8b")
    fig = chart_figure(result, "en")
    labels = legend_labels(fig)
    assert any(label.startswith("weights: ") for label in labels)
    assert any(label.startswith("KV cache: ") for label in labels)
    assert not any(label.startswith(("gradients", "optimizer", "adapters")) for label in labels)
    all_text = " ".join(texts(fig))
    assert "Memory per GPU: Llama-3.1-8B (8B), inference, 16-bit" in all_text
    assert fig.axes[0].get_ylabel() == "GB"


def test_stack_holds_the_nonzero_components_in_order() -> None:
    result = planned("full_7b")
    fig = chart_figure(result, "en")
    ax = fig.axes[0]
    bars = [p for p in ax.patches if isinstance(p, Rectangle)]
    heights = [p.get_height() for p in bars]
    b = result.breakdown
    assert b is not None
    expected = [v for v in (b.weights, b.adapters, b.gradients, b.optimizer, b.activations, b.logits, b.kv_cache,
                            b.overhead, b.cuda_context) if v >= 0.05]
    assert heights == pytest.approx(expected)
    bottoms = [p.get_y() for p in bars]
    assert bottoms[0] == 0 and bottoms[1] == pytest.approx(heights[0])
    assert ax.get_ylim()[1] > max(result.need_gb, sum(heights))


def test_capacity_lines() -> None:
    result = planned("lora_8b_4090")
    assert result.asked is not None and result.asked.gpu == "RTX 4090"
    lines = capacity_lines(result)
    memories = [m for m, _names, _fits in lines]
    assert memories == sorted(memories) and len(memories) == len(set(memories)) <= 5
    assert 24.0 in memories  # the GPU asked about, even though it does not fit
    assert any(m >= result.need_gb for m in memories)  # and one that does
    # the GPU named by the user is drawn and labelled
    assert any("RTX 4090: 24 GB" in t for t in texts(chart_figure(result, "en")))
    # GPUs of one memory size share a line
    qlora = planned("qlora_70b")
    by_size = {m: names for m, names, _fits in capacity_lines(qlora)}
    assert "H100 SXM" in by_size[80.0]


def test_lines_for_a_job_far_beyond_any_gpu() -> None:
    result = fx.full(405, 8600.0)
    lines = capacity_lines(result)
    assert lines and all(m < result.need_gb and not fits for m, _names, fits in lines)
    assert png_size(chart_png(result, "ru")) == (800, 500)


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
