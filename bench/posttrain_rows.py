"""Print one line per row of shared/data/posttrain-memory.jsonl: source, framework, method, measured, ours, error and
the line of our breakdown that dominates, grouped by source.

Usage: python bench/posttrain_rows.py [POSTTRAIN.jsonl] [--stated] [--as-run] [--set ROW:KEY=JSON ...] [--by-repo]
       [--markdown]

`ours` is the estimate of the request shared/tools/eval_posttrain.py builds from the row (bench/posttrain_accuracy.py
imports that mapping from the scorer), so the error column is the scored one; rows marked low confidence are shown and
not scored, as the scorer does. `verdict` is the answer's own (fits / tight / fits_with_changes / no_fit), marked ✗
where it contradicts the row: a run that worked (measured, or fits) told anything but fits/tight, a reported OOM told
fits/tight; the last lines count the verdicts that agree. --stated adds a diagnostic column, `stated`: the same
request plus the settings the row states but the scorer does not pass (tensor parallelism, Liger's fused loss, the
attention kernel, DDP for "device_map+ddp", "HF (no Unsloth)" as hf), to tell an error of the model from one of the
request. --set changes one field of one row's diagnostic request (JSON value, null removes it; implies --stated),
e.g. `--set SFTLONG-022:offload=false` to see a row as its figure says it ran. The diagnostic never feeds the score.
--as-run adds AS_RUN, the settings the sources show their runs used where the row records others (each with its
evidence below). A script that prints figures, not a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from posttrain_accuracy import DEFAULT, request, scored

from engine.contract import estimate_request

# the lines of our breakdown that can dominate a row (posttrain extra lines come from its `lines`)
STATE_LINES = ("weights", "adapters", "gradients", "optimizer")
SKIP_LINES = {"host_ram", "total", "cuda_context", "overhead", "pressure", "upcast", "kv_cache"}


def source(r: dict[str, Any]) -> str:
    """A short name of where the row was read: owner/repo plus the file, or the site."""
    s = str(r.get("source") or "")
    if s.startswith("https://github.com/"):
        parts = s.removeprefix("https://github.com/").split("/")
        tail = "wiki" if "wiki" in parts else ("#" + parts[-1] if "issues" in parts else "")
        return f"{parts[0]}/{parts[1]} {tail}".strip()
    if s.startswith("https://"):
        return s.removeprefix("https://").split("/")[0]
    repo, _, path = s.partition(":")
    return f"{repo} {path.split('@')[0].rsplit('/', 1)[-1]}"


def stated(r: dict[str, Any]) -> dict[str, Any]:
    """The scorer's request plus what the row says and the scorer drops (diagnostic only)."""
    q = request(r, False)
    name = str((r.get("framework") or {}).get("name") or "").lower()
    if "no unsloth" in name:
        q["framework"] = "hf"
    tp = r.get("tensor_parallel")
    if tp and tp > 1:
        q["tensor_parallel"] = tp
    extras = r.get("extras") or {}
    if extras.get("use_liger_kernel") or extras.get("cross_entropy_loss_fusion") or "liger" in str(r.get("source")):
        q["fused_loss"] = True
    att = str(r.get("attention") or "").lower()
    if "flash" in att:
        q["flash_attention"] = True
    elif att.startswith("eager"):
        q["flash_attention"] = False
    if "ddp" in str(r.get("sharding") or "").lower():
        q["sharding"] = "ddp"
    if extras.get("padding_free") is False:
        q["padding_free"] = False
    return q


# What the runs behind some rows used, where the row (or the scorer's request) says otherwise; diagnostic only.
GRPO_NOTEBOOK = {"prompt_len": 150, "optimizer": "paged_adamw_8bit"}
ALST_AS_RUN = {"offload": None}
AS_RUN: dict[str, dict[str, Any]] = {
    # huggingface/trl examples/notebooks/grpo_trl_lora_qlora.ipynb: GRPOConfig(optim="paged_adamw_8bit"), prompts of
    # one NuminaMath-TIR problem after a 4-line SYSTEM_PROMPT (~150 tokens; 8 generations of one prompt per batch, so
    # no padding to a longer prompt); the request leaves both to the defaults (512-token prompt, 32-bit paged AdamW)
    **{f"PT-GRPO-0{n}": GRPO_NOTEBOOK for n in ("07", "08", "10", "11", "12", "13")},
    # huggingface/blog ulysses-sp.md states "CPU optimizer offloading", but its figures are unoffloaded ZeRO-3
    # states (4.02B x 16 B / 4 GPUs = 15 GiB at every length); accelerate's own example for that blog
    # (examples/alst_ulysses_sequence_parallelism/sp-alst.ds-config.json) is ZeRO-3 with no offload_optimizer
    **{f"PT-SFTLONG-0{n}": ALST_AS_RUN for n in range(21, 27)},
}


def overrides(items: list[str]) -> dict[str, dict[str, Any]]:
    """--set ROW:KEY=JSON items by row id (with or without the PT- prefix)."""
    out: dict[str, dict[str, Any]] = defaultdict(dict)
    for item in items:
        row, _, assignment = item.partition(":")
        key, _, value = assignment.partition("=")
        if not (row and key and value):
            raise SystemExit(f"--set {item!r}: expected ROW:KEY=JSON")
        out["PT-" + row.removeprefix("PT-")][key] = json.loads(value)
    return out


def dominant(out: dict[str, Any]) -> str:
    """The largest line of the per-GPU peak: the post-training layer's policy lines and extra lines when it answered,
    else the memory model's; model states are summed as `states`."""
    pt = out.get("posttrain")
    lines: dict[str, float] = {}
    if pt:
        lines.update({k: float(v) for k, v in (pt.get("policy") or {}).items()})
        lines.update({x["key"]: float(x["gib"]) for x in pt.get("lines") or []})
    else:
        lines.update({k: float(v) for k, v in (out.get("per_gpu") or {}).items() if isinstance(v, int | float)})
    states = sum(lines.pop(k, 0.0) for k in STATE_LINES)
    lines = {k: v for k, v in lines.items() if k not in SKIP_LINES}
    lines["states"] = states
    key = max(lines, key=lambda k: lines[k])
    total = sum(lines.values()) or 1.0
    return f"{key} {lines[key] / total:.0%}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("data", nargs="?", default=str(DEFAULT))
    ap.add_argument("--stated", action="store_true", help="add the diagnostic column with the row's own settings")
    ap.add_argument("--set", action="append", default=[], metavar="ROW:KEY=JSON",
                    help="change one field of a row's diagnostic request (implies --stated)")
    ap.add_argument("--as-run", action="store_true", help="add AS_RUN to the diagnostic (implies --stated)")
    ap.add_argument("--by-repo", action="store_true", help="group by repository or site, not by file")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    changes = overrides(args.set)
    if args.as_run:
        for row, settings in AS_RUN.items():
            changes[row] = {**settings, **changes.get(row, {})}
    args.stated = args.stated or bool(changes)
    rows = [json.loads(line) for line in Path(args.data).read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r["status"] in ("measured", "oom", "fits")]
    groups: dict[str, list[str]] = defaultdict(list)
    errors: dict[str, list[float]] = defaultdict(list)
    diagnostic: list[float] = []
    agree: list[bool] = []
    for r in rows:
        q = request(r, False)
        out = estimate_request(q)
        est = (out.get("per_gpu") or {}).get("total")
        m = r.get("measured") or {}
        src = source(r).split(" ")[0] if args.by_repo else source(r)
        if r["status"] == "measured":
            truth = m["peak_gib"] * (1.1 if m.get("metric") == "allocated" else 1.0)
            e = float(est) / truth - 1 if est is not None else float("inf")
            if scored(r):
                errors[src].append(e)
                judged = f"{e:+.0%}" + ("" if -0.10 <= e <= 0.25 else " ✗")
            else:
                judged = f"({e:+.0%}, low confidence: not scored)"
        else:
            truth = m.get("bound_gib") or m.get("peak_gib")
            good = est is not None and ((est > truth) if r["status"] == "oom" else (est <= truth))
            judged = ("above" if r["status"] == "oom" else "under") + ("" if good else " ✗")
        said = str(out.get("verdict") or "error")
        right = (said in ("fits", "tight")) == (r["status"] != "oom")
        agree.append(right)
        cells = [r["id"].removeprefix("PT-"), r["kind"], str(q.get("framework") or "-"), str(q.get("method") or "-"),
                 ("" if r["status"] == "measured" else {"oom": "OOM>", "fits": "fits≤"}[r["status"]]) + f"{truth:.1f}",
                 f"{est:.1f}" if est is not None else "-", judged, said + ("" if right else " ✗"), dominant(out)]
        if args.stated:
            alt_q = stated(r)
            for key, value in changes.get(r["id"], {}).items():
                if value is None:
                    alt_q.pop(key, None)
                else:
                    alt_q[key] = value
            alt = (estimate_request(alt_q).get("per_gpu") or {}).get("total")
            if r["status"] == "measured" and scored(r):
                diagnostic.append(float(alt) / truth - 1 if alt is not None else float("inf"))
            cells.append("-" if alt is None else (f"{float(alt) / truth - 1:+.0%}" if r["status"] == "measured"
                                                  else f"{alt:.1f}"))
        groups[src].append(" | ".join(cells))
    head = ["row", "kind", "framework", "method", "measured", "ours", "error", "verdict", "dominant line (share)"]
    if args.stated:
        head.append("as run" if args.as_run else "stated")
    for src, lines in groups.items():
        errs = errors.get(src, [])
        summary = ""
        if errs:
            band = sum(-0.10 <= e <= 0.25 for e in errs)
            summary = f" — median |error| {statistics.median(abs(e) for e in errs):.0%}, {band}/{len(errs)} in band"
        print(f"\n{'### ' if args.markdown else ''}{src}{summary}\n")
        if args.markdown:
            print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
            for line in lines:
                print(f"| {line} |")
        else:
            print("  " + " | ".join(head))
            for line in lines:
                print("  " + line)
    every = [e for v in errors.values() for e in v]
    band = sum(-0.10 <= e <= 0.25 for e in every)
    print(f"\nall: median |error| {statistics.median(abs(e) for e in every):.1%}, {band}/{len(every)} in band")
    print(f"verdicts right (worked: fits/tight; OOM: not): {sum(agree)}/{len(agree)}")
    if args.stated:
        band = sum(-0.10 <= e <= 0.25 for e in diagnostic)
        print(f"diagnostic ({'as run' if args.as_run else 'stated'}): median |error| "
              f"{statistics.median(abs(e) for e in diagnostic):.1%}, {band}/{len(diagnostic)} in band")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
