"""Answer → PNG: the memory components stacked per card against the capacity of each arrangement the answer
recommends (the GPU asked about, the plans), the verdict in the title. The chart decides nothing: every figure
and every fit comes from the Answer.

Sized for a phone: 1080 × 1350 px (Telegram shows a photo at the chat's width), no text under 24 px. The font is
DejaVu Sans, which matplotlib ships (mpl-data/fonts/ttf, Bitstream Vera licence with the DejaVu changes in the
public domain): it has Cyrillic, so the chart never depends on the fonts of the machine it runs on.

Matplotlib's object API (`Figure` + `FigureCanvasAgg`) is used, never pyplot: no global figure registry, no
backend switching, safe to call from worker threads. Import this module from the bot only: the command line never
pays for matplotlib.
"""

from __future__ import annotations

import io
import textwrap
from dataclasses import dataclass

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from bot.views.catalogs import _
from bot.views.formats import num
from bot.views.view import view_model
from bot.views.words import COMPONENTS, component_label, gpu_name
from engine.schema import Answer, Breakdown, PlannedAnswer, PostTrainAnswer, ServingAnswer

WIDTH_PX, HEIGHT_PX, DPI = 1080, 1350, 100
TEXT = 26 / (DPI / 72)  # 26 px in points: the smallest text on the chart (ticks, legend, labels)
TITLE = 34 / (DPI / 72)  # 34 px, bold
FONT = "DejaVu Sans"
MIN_GB = 0.05  # components below this are not drawn (the table hides them too)
MAX_LINES = 5  # capacity lines of common GPUs when no arrangement is drawn
MAX_COLUMNS = 4  # arrangements side by side
SAME_GB = 0.5  # a plan whose card holds the answer's own need within this is drawn with the components

# One fixed colour per component, so the same component looks the same in every chart.
COLOURS = {
    "weights": "#4C72B0", "adapters": "#DD8452", "gradients": "#C44E52", "optimizer": "#8172B3",
    "activations": "#55A868", "logits": "#DA8BC3", "kv_cache": "#937860", "overhead": "#8C8C8C",
    "cuda_context": "#CCB974", "shape_margin": "#B0B0B0", "upcast": "#6C8EBF",
    "gathered": "#64B5CD", "autocast": "#A1C9F4", "step_buffers": "#B1A2DA",
}
FIT_COLOUR, NO_FIT_COLOUR, OTHER_COLOUR = "#2E7D32", "#C62828", "#9E9E9E"


@dataclass(frozen=True)
class Column:
    """One arrangement: its cards' capacity, what one card holds, whether it fits, whether the answer's own
    components are what it holds (else the per-card figure of its plan, e.g. ZeRO-3 over more cards)."""

    label: str
    capacity: float
    used: float
    fits: bool
    stacked: bool


Line = tuple[float, list[str], bool]  # memory GB, GPU names of that size, whether the job fits on them


def capacity_lines(a: PlannedAnswer, limit: int = MAX_LINES) -> list[Line]:
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


def columns(a: PlannedAnswer, lang: str) -> list[Column]:
    """The arrangement asked about (at its count), then the recommended plans, each once."""
    assert a.breakdown is not None
    out: list[Column] = []
    seen: set[tuple[str, int]] = set()
    if a.asked is not None and a.verdict != "compare":
        seen.add((a.asked.gpu, a.asked.count))
        out.append(Column(f"{a.asked.count}×{gpu_name(lang, a.asked.gpu)}", a.asked.memory_gb, a.need_gb,
                          a.verdict in ("fits", "tight"), True))
    for c in a.comparison:
        if (c.gpu, c.count) not in seen:
            seen.add((c.gpu, c.count))
            out.append(Column(f"{c.count}×{gpu_name(lang, c.gpu)}", c.memory_gb, c.need_gb, c.fits, True))
    for p in [*a.plans[:3], *a.alternatives[:3]]:
        if (p.gpu, p.count) in seen:
            continue
        seen.add((p.gpu, p.count))
        used = p.per_gpu_gb + a.breakdown.cuda_context
        out.append(Column(f"{p.count}×{gpu_name(lang, p.gpu)}", p.memory_gb, used, True,
                          abs(used - a.need_gb) <= SAME_GB))
    return out[:MAX_COLUMNS]


def _stack(b: Breakdown) -> list[tuple[str, float]]:
    values = b.model_dump()  # what is held; a line the table shows below zero (engine.parts) is not drawn
    return [(key, float(values[key])) for key in COMPONENTS if values.get(key, 0.0) >= MIN_GB]


def _bars(lang: str, a: PlannedAnswer) -> list[tuple[str, str, float]]:
    """(colour, label, GB) of each stacked component; a post-training answer stacks its own lines."""
    if isinstance(a, PostTrainAnswer):
        from bot.views.posttrain import chart_rows

        rows = chart_rows(lang, a.posttrain)
        return [(COLOURS.get(key) or colour, label, value) for key, label, value, colour in rows]
    return [(COLOURS[key], component_label(lang, key), value) for key, value in _stack(a.breakdown)]


def _wrap(text: str, width: int) -> str:
    return "\n".join(textwrap.wrap(text, width, break_on_hyphens=False)) or text


def _gb(lang: str, value: float) -> str:
    return f"{num(lang, value)}\u00a0{_(lang, 'GB')}"


def chart_figure(a: PlannedAnswer, lang: str) -> Figure:
    """The chart as a matplotlib Figure (not yet rendered): the verdict as its title, one stacked bar per
    arrangement against its card's capacity (or, with none, against familiar GPUs' lines), the legend below."""
    assert a.scenario is not None and a.breakdown is not None
    view = view_model(lang, a)
    fig = Figure(figsize=(WIDTH_PX / DPI, HEIGHT_PX / DPI), dpi=DPI)
    FigureCanvasAgg(fig)
    title = _wrap(view.headline, 46)
    fig.text(0.04, 0.975, title, fontsize=TITLE, fontweight="bold", ha="left", va="top", family=FONT)
    below = 0.96 - 0.036 * (title.count("\n") + 1)  # the summary right under the title, one or two lines
    fig.text(0.04, below, _wrap(view.summary, 62), fontsize=TEXT, ha="left", va="top", color="#444444", family=FONT)
    ax = fig.add_axes((0.13, 0.31, 0.83, 0.53))
    stack = _bars(lang, a)
    cols = columns(a, lang) or [Column(_(lang, "per GPU"), 0.0, a.need_gb, True, True)]
    top = max([a.need_gb, sum(v for _c, _l, v in stack), *(c.capacity for c in cols), *(c.used for c in cols)])
    lines = capacity_lines(a) if all(c.capacity == 0 for c in cols) else []
    top = max([top, *(m for m, _n, _f in lines)]) * 1.12
    width = 0.56
    xs = list(range(len(cols)))
    boxed = [x for x in xs if cols[x].capacity]
    if boxed:  # each card's capacity: a dashed box, green where the job fits, red where not
        edge = [FIT_COLOUR if cols[x].fits else NO_FIT_COLOUR for x in boxed]
        heights = [cols[x].capacity for x in boxed]
        ax.bar(boxed, heights, width=width + 0.16, color="#F1F1F1", zorder=1)
        ax.bar(boxed, heights, width=width + 0.16, fill=False, edgecolor=edge, linewidth=3, linestyle="--", zorder=4)
        for x, colour in zip(boxed, edge, strict=True):
            ax.text(x, cols[x].capacity + top * 0.012, _gb(lang, cols[x].capacity), ha="center", va="bottom",
                    fontsize=TEXT, color=colour, fontweight="bold", family=FONT, zorder=5,
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 1, "alpha": 0.8})
    stacked = [x for x in xs if cols[x].stacked]
    bottom = 0.0
    for colour, label, value in stack:  # one call per component: a call per column and component was slow
        ax.bar(stacked, [value] * len(stacked), width=width, bottom=bottom, color=colour, edgecolor="white",
               linewidth=1, zorder=2, label=f"{label}: {num(lang, value)}")
        bottom += value
    other = [x for x in xs if not cols[x].stacked]
    if other:  # a plan that splits the job differently (ZeRO-3 over more cards): its per-card figure
        ax.bar(other, [cols[x].used for x in other], width=width, color=OTHER_COLOUR, edgecolor="white", zorder=2,
               label=_(lang, "per card, split another way"))
    if stacked:  # components are not all alive at once: the peak is marked on its own
        ax.hlines([a.need_gb] * len(stacked), [x - width / 2 - 0.04 for x in stacked],
                  [x + width / 2 + 0.04 for x in stacked], colors="black", linewidth=3, zorder=3)
    for x, col in enumerate(cols):
        if not col.capacity or abs(col.used - col.capacity) > 0.06 * top:  # else it would cover the capacity label
            shown = _(lang, "peak %(gb)s") % {"gb": num(lang, col.used)} if col.stacked else num(lang, col.used)
            ax.text(x, col.used, shown, ha="center", va="bottom", fontsize=TEXT, zorder=3,
                    family=FONT)
    for memory, names, fits in lines:
        colour = FIT_COLOUR if fits else NO_FIT_COLOUR
        ax.axhline(memory, color=colour, linestyle="--", linewidth=2, zorder=1)
        ax.text(len(cols) - 0.5, memory, f"{' / '.join(names[:2])}: {_gb(lang, memory)}", ha="right",
                va="bottom", fontsize=TEXT, color=colour, family=FONT)
    ax.set_ylim(0, top)
    ax.set_xlim(-0.6, len(cols) - 0.4 if not lines else max(len(cols) - 0.4, 1.6))
    ax.set_xticks(range(len(cols)), [_wrap(c.label, 12) for c in cols], fontsize=TEXT, family=FONT)
    style_axes(ax, lang)
    handles, labels = ax.get_legend_handles_labels()
    if other:  # the grey bar last, the components top-down like the stack
        handles, labels = [*handles[-2::-1], handles[-1]], [*labels[-2::-1], labels[-1]]
    else:
        handles, labels = handles[::-1], labels[::-1]
    fig.legend(handles, labels, loc="upper left", bbox_to_anchor=(0.04, 0.225), ncols=2,
               frameon=False, prop={"family": FONT, "size": TEXT},
               title=_(lang, "GB per card"), title_fontsize=TEXT, alignment="left", handlelength=1.2,
               columnspacing=1.0)
    return fig


def style_axes(ax: Axes, lang: str) -> None:
    """What the training and serving charts share: ticks, the GB axis in the reader's numbers, a light grid."""
    ax.tick_params(axis="both", labelsize=TEXT, length=0)
    for tick in ax.get_yticklabels():
        tick.set_fontfamily(FONT)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _pos: num(lang, y)))
    ax.set_ylabel(_(lang, "GB per card"), fontsize=TEXT, family=FONT)
    ax.grid(axis="y", alpha=0.25)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def render_png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    # zlib level 1: a third of the encoding time for a file a fifth larger (Telegram recompresses photos anyway)
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None}, pil_kwargs={"compress_level": 1})
    return buf.getvalue()


def chart_png(a: Answer, lang: str) -> bytes:
    """The chart as PNG bytes, 1080 × 1350 px: a serving answer's per card against the engine's share (its own
    module), a training answer's components against each arrangement."""
    if isinstance(a, ServingAnswer):
        from bot.views.serving_chart import serving_figure

        return render_png(serving_figure(a, lang))
    assert isinstance(a, PlannedAnswer), a.kind  # a chart is drawn for an answer with memory figures only
    return render_png(chart_figure(a, lang))

