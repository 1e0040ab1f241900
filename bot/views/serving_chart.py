"""A serving Answer → its chart: one stacked bar per card of each arrangement (the one answered, then the other GPUs
that serve the asked users): weights, activation peak, non-torch memory + CUDA graphs and the KV pool, against the
card's capacity (dashed box) and the share the engine takes of it (gpu_memory_utilization × capacity, a solid line),
the count and parallelism under each bar, the users it holds above it, the verdict in the title.

The same page, fonts and sizes as the training chart (bot/views/chart.py: 1080 × 1350 px, DejaVu Sans, no text under
24 px); every figure comes from the Answer (engine.serving's ServingResult), the chart decides nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from bot.views.catalogs import _, _n
from bot.views.formats import decimal, num
from bot.views.serving_view import serving_view
from bot.views.serving_words import ENGINE_SETTINGS
from bot.views.words import gpu_name
from engine.schema import ServingAnswer, ServingResult

MAX_COLUMNS = 4
COLOURS = {"weights": "#4C72B0", "activation": "#55A868", "non_torch": "#8C8C8C", "kv_pool": "#937860",
           "graphs": "#CCB974"}
FIT_COLOUR, NO_FIT_COLOUR, BUDGET_COLOUR = "#2E7D32", "#C62828", "#1F1F1F"


@dataclass(frozen=True)
class Bar:
    """One card of one arrangement, GB (2^30 bytes): its parts, capacity and the engine's share of it."""

    label: str  # the GPUs and the parallelism, on two lines
    weights: float
    activation: float
    non_torch: float  # non-torch memory (+ CUDA graphs where the engine counts them in its share)
    kv_pool: float
    graphs: float  # CUDA graphs the engine captures outside its share (vLLM >= 0.11 V1), drawn above the KV pool
    capacity: float
    budget: float
    room: int  # requests of the asked context the arrangement holds at once
    fits: bool


def _par(tp: int, pp: int, replicas: int) -> str:
    par = f"TP\u00a0{tp}" + (f"×PP\u00a0{pp}" if pp > 1 else "")
    return (f"{replicas}×({par})" if replicas > 1 else par) if tp * pp * replicas > 1 else ""


def bars(lang: str, a: ServingAnswer) -> list[Bar]:
    """The arrangement answered, then the other GPUs that serve the asked users (each GPU kind once)."""
    r = a.serving
    assert r is not None and r.memory is not None and r.gpu is not None and r.settings is not None
    m, s = r.memory, r.settings
    local = s.family in ("llama.cpp", "ollama", "hf")
    par = "" if local else _par(s.tensor_parallel, s.pipeline_parallel, r.replicas)
    outside = not m.cuda_graphs_in_budget
    out = [Bar(f"{r.gpu.count}×{gpu_name(lang, r.gpu.name)}" + (f"\n{par}" if par else ""), m.weights_gib,
               m.activation_peak_gib, m.non_torch_gib + (0.0 if outside else m.cuda_graph_gib),
               max(0.0, m.kv_pool_gib), m.cuda_graph_gib if outside else 0.0, r.gpu.total_gib, m.budget_gib,
               a.serving_users, r.fits)]
    seen = {(r.gpu.name, r.gpu.count)}
    for x in [r.arrangement, *r.alternatives] if r.arrangement else []:
        if x is None or (x.gpu, x.count) in seen or not x.total_gib:
            continue
        seen.add((x.gpu, x.count))
        par = _par(x.tensor_parallel, x.pipeline_parallel, x.replicas)
        room = math.floor(x.concurrency_at_context + 1e-9) * max(1, x.replicas)
        graphs = x.cuda_graph_gib if outside else 0.0
        if x.users_per_instance:
            room = min(room, x.users_per_instance * max(1, x.replicas))  # max_num_seqs caps it too
        out.append(Bar(f"{x.count}×{gpu_name(lang, x.gpu)}" + (f"\n{par}" if par else ""), x.weights_gib,
                       x.activation_peak_gib, x.non_torch_gib - graphs, x.kv_pool_gib, graphs, x.total_gib,
                       x.budget_gib, room, True))
    return out[:MAX_COLUMNS]


def _labels(lang: str, r: ServingResult) -> dict[str, str]:
    return {"weights": _(lang, "weights"), "activation": _(lang, "activation peak"),
            "non_torch": _(lang, "non-torch + CUDA graphs") if not any_outside(r) else _(lang, "non-torch memory"),
            "kv_pool": _(lang, "KV pool"), "graphs": _(lang, "CUDA graphs (beyond the engine's share)")}


def any_outside(r: ServingResult) -> bool:
    return r.memory is not None and not r.memory.cuda_graphs_in_budget and r.memory.cuda_graph_gib > 0


def _tick(lang: str, c: Bar) -> str:
    """"4×A100 80GB / SXM / TP 4 / 56 at once": the GPUs (wrapped), the parallelism, the requests it holds."""
    from bot.views.chart import _wrap

    gpus, *rest = c.label.split("\n")
    held = _n(lang, "%(n)s at once", "%(n)s at once", c.room) % {"n": num(lang, c.room)}
    return "\n".join([_wrap(gpus, 12), *rest, held])


def headed_figure(view: Any, ceiling: float) -> tuple[Figure, float]:
    """A chart page with the answer's headline and summary on top; the top of the plot below them (a long title
    pushes it down, never above `ceiling`)."""
    from bot.views.chart import DPI, FONT, HEIGHT_PX, TEXT, TITLE, WIDTH_PX, _wrap

    fig = Figure(figsize=(WIDTH_PX / DPI, HEIGHT_PX / DPI), dpi=DPI)
    FigureCanvasAgg(fig)
    title = _wrap(view.headline, 46)
    fig.text(0.04, 0.975, title, fontsize=TITLE, fontweight="bold", ha="left", va="top", family=FONT)
    below = 0.96 - 0.036 * (title.count("\n") + 1)
    summary = _wrap(view.summary, 62)
    fig.text(0.04, below, summary, fontsize=TEXT, ha="left", va="top", color="#444444", family=FONT)
    return fig, min(ceiling, below - 0.03 * (summary.count("\n") + 1) - 0.05)


def serving_figure(a: ServingAnswer, lang: str) -> Figure:
    from bot.views.chart import FONT, TEXT, _gb, style_axes

    r = a.serving
    assert r is not None
    fig, top_of_axes = headed_figure(serving_view(lang, a), 0.81)
    ax = fig.add_axes((0.13, 0.31, 0.83, top_of_axes - 0.31))
    cols = bars(lang, a)
    xs = list(range(len(cols)))
    top = max(max(c.capacity, c.weights + c.activation + c.non_torch + c.kv_pool + c.graphs) for c in cols) * 1.12
    width = 0.56
    edges = [FIT_COLOUR if c.fits else NO_FIT_COLOUR for c in cols]
    caps = [c.capacity for c in cols]
    # the card: one call for fill and dashed edge (a call per artist kind is most of the build time)
    ax.bar(xs, caps, width=width + 0.16, color="#F1F1F1", edgecolor=edges, linewidth=3, linestyle="--", zorder=1)
    labels = _labels(lang, r)
    bottom = [0.0] * len(cols)
    first = cols[0]
    # SGLang's mem_fraction_static holds weights and KV only: its activations sit above the share, with the graphs
    order = ("weights", "non_torch", "kv_pool", "activation", "graphs") if r.settings and \
        r.settings.family == "sglang" else ("weights", "activation", "non_torch", "kv_pool", "graphs")
    for key in order:  # one call per part, all columns
        values = [float(getattr(c, key)) for c in cols]
        if max(values) < 0.05:
            continue  # nothing of it on any card (llama.cpp has no CUDA graphs, graphs inside the share)
        ax.bar(xs, values, width=width, bottom=bottom, color=COLOURS[key], edgecolor="white", linewidth=1, zorder=2,
               label=f"{labels[key]}: {num(lang, getattr(first, key))}")
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    paged = r.settings is not None and r.settings.family not in ("llama.cpp", "ollama", "hf")
    budgets = [x for x in xs if paged and 0 < cols[x].budget < cols[x].capacity - 0.05]
    if budgets:  # the engine's share of the card: gpu_memory_utilization × capacity
        ax.hlines([cols[x].budget for x in budgets], [x - width / 2 - 0.08 for x in budgets],
                  [x + width / 2 + 0.08 for x in budgets], colors=BUDGET_COLOUR, linewidth=3, zorder=5)
    util = r.settings.gpu_memory_utilization if r.settings else 0.0
    for x, c in enumerate(cols):
        ax.text(x, c.capacity + top * 0.012, _gb(lang, c.capacity), ha="center", va="bottom", fontsize=TEXT,
                color=edges[x], fontweight="bold", family=FONT, zorder=6,
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1, "alpha": 0.8})
    ax.set_ylim(0, top)
    ax.set_xlim(-0.6, len(cols) - 0.4)
    ax.set_xticks(xs, [_tick(lang, c) for c in cols], fontsize=TEXT, family=FONT)
    style_axes(ax, lang)
    handles, names = ax.get_legend_handles_labels()
    handles, names = handles[::-1], names[::-1]
    if budgets:
        from matplotlib.lines import Line2D

        handles.append(Line2D([0], [0], color=BUDGET_COLOUR, linewidth=3))
        knob = ENGINE_SETTINGS.get(r.settings.family if r.settings else "", {}).get("gpu_memory_utilization",
                                                                                    "gpu_memory_utilization")
        shares = {round(cols[x].budget / cols[x].capacity, 2) for x in budgets}
        if len(shares) == 1:  # one share for every bar (SGLang's default falls with TP): its figure
            names.append(_(lang, "%(util)s × card memory (%(knob)s)") % {"util": decimal(lang, util, 2), "knob": knob})
        else:
            names.append(_(lang, "the engine's share of the card (%(knob)s)") % {"knob": knob})
    fig.legend(handles, names, loc="upper left", bbox_to_anchor=(0.04, 0.225), ncols=1, frameon=False,
               prop={"family": FONT, "size": TEXT}, title=_(lang, "GB per card"),
               title_fontproperties={"family": FONT, "size": TEXT}, alignment="left", handlelength=1.2)
    return fig
