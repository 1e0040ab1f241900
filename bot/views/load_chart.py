"""A serving answer under load → its chart: TTFT p95 and TPOT against requests in flight (left axis, ms, log
scale), output tokens/s on the right axis, the promise as dotted lines, the point asked about, and where the KV
pool or max_num_seqs binds (the arrangement's saturation) as a vertical line.

Every figure comes from `ServingResult.load` (engine/serving/loadplan.py: the instance's concurrency sweep times
its replicas), the chart decides nothing. The same page, fonts and sizes as the other charts (bot/views/chart.py:
1080 × 1350 px, DejaVu Sans, no text under 24 px); matplotlib is imported only when a chart is drawn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from matplotlib.figure import Figure

from bot.views.catalogs import _
from bot.views.formats import num
from bot.views.serving_chart import headed_figure
from bot.views.serving_view import serving_view
from engine.schema import ServingAnswer
from engine.schema.serving import ServingLoad

TTFT_COLOUR, TPOT_COLOUR, THROUGHPUT_COLOUR, LIMIT_COLOUR = "#C44E52", "#4C72B0", "#55A868", "#1F1F1F"


@dataclass(frozen=True)
class Series:
    """The sweep for the whole arrangement: requests in flight, TTFT p95 and TPOT (ms), output tokens/s."""

    concurrency: list[int]
    ttft_p95_ms: list[float]
    tpot_ms: list[float]
    output_tokens_s: list[float]
    saturation: int  # requests the arrangement runs at once (all replicas)
    saturation_limit: str  # kv_cache | max_num_seqs
    asked: tuple[int, float] | None  # (requests in flight, TTFT) at the load asked, when it is stable
    ttft_key: str  # the TTFT percentile drawn: the promise's ("p95" unless the question said another)


def series(load: ServingLoad) -> Series:
    r, key = load.scale, f"p{load.ttft_percentile}"  # the percentile the promise is at
    pts = [c for c in load.curve if c.stable and c.concurrency and key in c.ttft_ms and "p50" in c.tpot_ms]
    p = load.point
    asked = ((p.concurrency or 1) * r, p.ttft_ms[key]) if p.stable and key in p.ttft_ms else None
    return Series([(c.concurrency or 0) * r for c in pts], [c.ttft_ms[key] for c in pts],
                  [c.tpot_ms["p50"] for c in pts], [(c.output_tokens_s or 0.0) * r for c in pts],
                  p.max_concurrency * r, load.saturation_limit or "kv_cache", asked, key)


def _limit_label(lang: str, s: Series) -> str:
    if s.saturation_limit == "max_num_seqs":
        return _(lang, "max_num_seqs binds: %(n)s at once") % {"n": num(lang, s.saturation)}
    return _(lang, "the KV pool binds: %(n)s at once") % {"n": num(lang, s.saturation)}


def load_figure(a: ServingAnswer, lang: str) -> Figure:
    from bot.views.chart import FONT, TEXT

    load = a.serving.load
    assert load is not None
    s = series(load)
    fig, top_of_axes = headed_figure(serving_view(lang, a), 0.78)
    ax = fig.add_axes((0.15, 0.36, 0.68, top_of_axes - 0.36))
    right = ax.twinx()
    ax.plot(s.concurrency, s.ttft_p95_ms, color=TTFT_COLOUR, linewidth=3, marker="o", markersize=7,
            label=_(lang, "TTFT %(pct)s, ms") % {"pct": s.ttft_key}, zorder=4)
    ax.plot(s.concurrency, s.tpot_ms, color=TPOT_COLOUR, linewidth=3, marker="s", markersize=7,
            label=_(lang, "TPOT, ms"), zorder=4)
    right.plot(s.concurrency, s.output_tokens_s, color=THROUGHPUT_COLOUR, linewidth=3, linestyle="--",
               label=_(lang, "output tokens/s, all GPUs"), zorder=3)
    if load.ttft_p95_target_ms:
        ax.axhline(load.ttft_p95_target_ms, color=TTFT_COLOUR, linewidth=2.5, linestyle=":",
                   label=_(lang, "promise: TTFT %(pct)s ≤ %(x)s\u00a0ms") % {
                       "x": num(lang, load.ttft_p95_target_ms), "pct": s.ttft_key})
    if load.tpot_target_ms:
        ax.axhline(load.tpot_target_ms, color=TPOT_COLOUR, linewidth=2.5, linestyle=":",
                   label=_(lang, "promise: TPOT ≤ %(x)s\u00a0ms") % {"x": num(lang, load.tpot_target_ms)})
    if s.saturation >= 1:
        ax.axvline(s.saturation, color=LIMIT_COLOUR, linewidth=2.5, linestyle="-.", label=_limit_label(lang, s))
    if s.asked is not None:
        ax.plot([s.asked[0]], [s.asked[1]], linestyle="none", marker="*", markersize=26, color="#F2A900",
                markeredgecolor=LIMIT_COLOUR, label=_(lang, "your load"), zorder=6)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(_(lang, "requests in flight") if load.replicas <= 1 else
                  _(lang, "requests in flight, all %(n)s replicas") % {"n": num(lang, load.replicas)},
                  fontsize=TEXT, family=FONT)
    ax.set_ylabel(_(lang, "latency, ms"), fontsize=TEXT, family=FONT)
    right.set_ylabel(_(lang, "tokens/s"), fontsize=TEXT, family=FONT, color=THROUGHPUT_COLOUR)
    right.set_ylim(0, max(s.output_tokens_s or [1.0]) * 1.15)
    from matplotlib.ticker import FuncFormatter

    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: num(lang, round(v))))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: num(lang, round(v, 1))))
    # 2, 3 and 5 in every decade labelled too (in the reply's numbers): latencies within a decade keep readable ticks
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _pos: num(lang, round(v, 1)) if _sparse_minor(v) else ""))
    right.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: num(lang, round(v))))
    for axis in (ax, right):
        axis.tick_params(which="both", labelsize=TEXT)
        for minor in (False, True):
            for label in axis.get_xticklabels(minor=minor) + axis.get_yticklabels(minor=minor):
                label.set_fontfamily(FONT)
    ax.grid(True, which="major", color="#DDDDDD", linewidth=1)
    handles, names = ax.get_legend_handles_labels()
    more, more_names = right.get_legend_handles_labels()
    fig.legend(handles + more, names + more_names, loc="upper left", bbox_to_anchor=(0.04, 0.27), ncols=1,
               frameon=False, prop={"family": FONT, "size": TEXT}, handlelength=1.6)
    return fig


def load_png(a: ServingAnswer, lang: str) -> bytes:
    from bot.views.chart import render_png

    return render_png(load_figure(a, lang))


def _sparse_minor(v: float) -> bool:
    """A minor tick of a log axis worth a label: 2, 3 or 5 times a power of ten."""
    if v <= 0:
        return False
    m = v / 10 ** math.floor(math.log10(v))
    return any(abs(m - k) < 1e-6 for k in (2, 3, 5))
