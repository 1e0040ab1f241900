"""Answer → PNG: the memory components stacked in one bar against the capacity of the Answer's GPUs, each
line coloured by the Answer's own fit (the chart decides nothing).

Matplotlib's object API (`Figure` + `FigureCanvasAgg`) is used, never pyplot: no global figure
registry, no backend switching, safe to call from worker threads. Import this module from the
bot only: the command line never pays for matplotlib.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from bot.views.catalogs import _
from bot.views.formats import num
from bot.views.words import COMPONENTS, component_label
from engine.schema import Answer, Breakdown, Scenario

WIDTH_IN, HEIGHT_IN, DPI = 8.0, 5.0, 100  # 800 × 500 px
MIN_GB = 0.05  # components below this are not drawn (the table hides them too)
MAX_LINES = 5  # capacity lines; more would overlap
MAX_NAMES = 2  # GPU names on one line (same memory size)
LABEL_GAP = 0.04  # axes fraction between two line labels (8-point text on a 400-pixel axis)

# One fixed colour per component, so the same component looks the same in every chart.
COLOURS = {
    "weights": "#4C72B0", "adapters": "#DD8452", "gradients": "#C44E52", "optimizer": "#8172B3",
    "activations": "#55A868", "logits": "#DA8BC3", "kv_cache": "#937860", "overhead": "#8C8C8C",
    "cuda_context": "#CCB974",
}
FIT_COLOUR, NO_FIT_COLOUR = "#2E7D32", "#C62828"


def method_text(lang: str, s: Scenario) -> str:
    bits = _(lang, "%(bits)s-bit") % {"bits": s.bits}
    if s.method == "qlora":
        text = f"QLoRA {bits}, r{s.lora_rank}"
    elif s.method == "lora":
        text = f"LoRA r{s.lora_rank}"
    elif s.method == "inference":
        text = _(lang, "inference, %(bits)s") % {"bits": bits}
    else:
        text = _(lang, "full fine-tuning")
    if s.gpu_count > 1:
        text += f", {s.gpu_count}×GPU"
    return text


def model_text(lang: str, s: Scenario) -> str:
    return f"{s.arch.name} ({num(lang, s.arch.params / 1e9)}B)" if s.arch.known else s.arch.name


Line = tuple[float, list[str], bool]  # memory GB, GPU names of that size, whether the job fits on them


def capacity_lines(a: Answer, limit: int = MAX_LINES) -> list[Line]:
    """One line per memory size, smallest first: the GPU asked about, the GPUs of the plans, and the
    common GPUs that bracket the need (the largest below it, the smallest above, those within 2.5×)."""
    need = a.need_gb
    picked = [c for c in a.capacity if c.role != "common"]
    common = [c for c in a.capacity if c.role == "common"]
    below = [c for c in common if c.memory_gb < need]
    above = [c for c in common if c.memory_gb >= need]
    if below:
        picked.append(max(below, key=lambda c: c.memory_gb))
    if above:
        picked.append(min(above, key=lambda c: c.memory_gb))
    picked += [c for c in common if need / 2.5 <= c.memory_gb <= need * 2.5]

    groups: dict[float, tuple[list[str], bool]] = {}
    for c in picked:
        key = round(c.memory_gb * 2) / 2
        if key not in groups:
            if len(groups) >= limit:
                continue
            groups[key] = ([], c.fits)
        if c.gpu not in groups[key][0]:
            groups[key][0].append(c.gpu)
    return [(memory, names, ok) for memory, (names, ok) in sorted(groups.items())]


def _line_label(lang: str, memory: float, names: Sequence[str]) -> str:
    shown = " / ".join(names[:MAX_NAMES]) + (" …" if len(names) > MAX_NAMES else "")
    return f"{shown}: {num(lang, memory)} {_(lang, 'GB')}"


def _stack(b: Breakdown) -> Iterable[tuple[str, float]]:
    values = b.model_dump()
    return [(key, float(values[key])) for key in COMPONENTS if values[key] >= MIN_GB]


def _bars(lang: str, a: Answer) -> list[tuple[str, str, float]]:
    """(colour, label, GB) of each stacked component; a post-training answer stacks its own lines."""
    if a.posttrain is not None:
        from bot.views.posttrain import chart_rows

        rows = chart_rows(lang, a.posttrain)
        return [(COLOURS.get(key) or colour, label, value) for key, label, value, colour in rows]
    assert a.breakdown is not None
    return [(COLOURS[key], component_label(lang, key), value) for key, value in _stack(a.breakdown)]


def chart_figure(a: Answer, lang: str) -> Figure:
    """The chart as a matplotlib Figure (not yet rendered): one stacked bar, capacity lines, legend."""
    assert a.scenario is not None and a.breakdown is not None
    fig = Figure(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0.09, 0.08, 0.56, 0.80))
    need = a.need_gb

    bottom = 0.0
    for colour, label, value in _bars(lang, a):
        ax.bar(0.0, value, width=0.5, bottom=bottom, color=colour, edgecolor="white", linewidth=0.6,
               label=f"{label}: {num(lang, value)}")
        bottom += value
    # Components are not all alive at the peak (gradients and activations take turns), so the
    # stack can exceed the peak: the peak is marked on its own.
    ax.hlines(need, -0.32, 0.32, colors="black", linewidth=2.0, zorder=3)
    ax.annotate(_(lang, "peak %(gb)s GB") % {"gb": num(lang, need)}, (0.0, max(need, bottom)),
                xytext=(0, 4), textcoords="offset points", ha="center", va="bottom", fontsize=9,
                fontweight="bold")

    lines = capacity_lines(a)
    top = max([need, bottom, *(m for m, _names, _fits in lines)]) * 1.15
    ax.set_ylim(0, top)
    label_y = -1.0  # axes fraction of the last label: close lines get their labels nudged apart
    for memory, names, fits in lines:
        colour = FIT_COLOUR if fits else NO_FIT_COLOUR
        ax.axhline(memory, color=colour, linestyle="--", linewidth=1.2, zorder=2)
        label_y = max(memory / top, label_y + LABEL_GAP)
        ax.text(0.995, label_y, _line_label(lang, memory, names), transform=ax.transAxes,
                ha="right", va="bottom", fontsize=8, color=colour, zorder=4,
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.6, "alpha": 0.85})
    ax.set_xlim(-0.6, 1.6)
    ax.set_xticks([])
    ax.set_ylabel(_(lang, "GB"))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _pos: num(lang, y)))
    ax.grid(axis="y", alpha=0.25)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.suptitle(_(lang, "Memory per GPU: %(model)s, %(method)s")
                 % {"model": model_text(lang, a.scenario), "method": method_text(lang, a.scenario)},
                 fontsize=11, x=0.02, ha="left")
    handles, labels = ax.get_legend_handles_labels()
    # the legend reads top-down like the stack
    fig.legend(handles[::-1], labels[::-1], loc="upper left", bbox_to_anchor=(0.67, 0.88), fontsize=9,
               frameon=False, title=_(lang, "GB"), title_fontsize=9, alignment="left")
    return fig


def render_png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return buf.getvalue()


def chart_png(a: Answer, lang: str) -> bytes:
    """The chart as PNG bytes, 800 × 500 px; the line of the GPU asked about is always drawn."""
    return render_png(chart_figure(a, lang))
