"""Print the post-training / long-context estimate's error per stage against shared/data/posttrain-memory.jsonl.

Usage: python bench/posttrain_accuracy.py [POSTTRAIN.jsonl] [-v] [--resolve-names]

Same yardstick as shared/tools/eval_posttrain.py, whose row → request mapping this script imports (every setting
a row states, CONTRACT v2.1 fields included): `measured` rows give estimate / truth − 1 (truth × 1.1 when measured
as allocated), band −10 % … +25 %, rows marked low confidence shown with -v and not scored; `oom` rows must be
estimated above their bound, `fits` rows at or under their card. Rows are split by whether engine/posttrain handles them
(a post-training stage or context parallelism) or the plain memory model does. --resolve-names retries model names
the catalog does not know without their organisation prefix and -Instruct/-Chat suffix (a diagnostic of the
catalog's name lookup, not part of the score). A script that prints figures, not a test.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import statistics
from collections import defaultdict
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from engine.catalog import find_model
from engine.contract import estimate_request

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "posttrain-memory.jsonl"
SCORER = DEFAULT.parents[1] / "tools" / "eval_posttrain.py"


@cache
def scorer() -> ModuleType:
    """shared/tools/eval_posttrain.py as a module: its row → request mapping is the one this script uses, so the
    figures here are the scored ones (one mapping, kept where the scorer keeps it)."""
    spec = importlib.util.spec_from_file_location("eval_posttrain", SCORER)
    if spec is None or spec.loader is None:
        raise SystemExit(f"the scorer is not at {SCORER}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def scored(r: dict[str, Any]) -> bool:
    """Whether the scorer scores a measured row (rows marked low confidence are shown, not scored)."""
    return r.get("confidence") != "low"


def resolved(name: str) -> str:
    if find_model(name):
        return name
    bare = name.split("/", 1)[-1]
    for cand in (bare, re.sub(r"-(Instruct|Chat|it)(-\d+)?$", "", bare, flags=re.I)):
        if find_model(cand):
            return cand
    return name


def request(r: dict[str, Any], resolve: bool) -> dict[str, Any]:
    """The scorer's request for a row (shared/tools/eval_posttrain.py request); --resolve-names retries the model
    name the catalog does not know."""
    q: dict[str, Any] = scorer().request(r)
    if resolve:
        q["model"] = {**q["model"], "name": resolved(q["model"]["name"])}
    return q


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("data", nargs="?", default=str(DEFAULT))
    ap.add_argument("-v", action="store_true")
    ap.add_argument("--resolve-names", action="store_true")
    args = ap.parse_args()
    rows = [json.loads(line) for line in Path(args.data).read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r["status"] in ("measured", "oom", "fits")]
    errors: dict[str, list[float]] = defaultdict(list)
    bounds: dict[str, list[bool]] = defaultdict(list)
    layer: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        q = request(r, args.resolve_names)
        out = estimate_request(q)
        est = (out.get("per_gpu") or {}).get("total")
        owner = "posttrain" if "posttrain" in out else "memory"
        m = r.get("measured") or {}
        if r["status"] == "measured" and m.get("peak_gib") and not scored(r):
            if args.v:
                print(f"  {r['id']:>22} {r['kind']:18} {owner:9} est {est} stated {m['peak_gib']} (low confidence)")
        elif r["status"] == "measured" and m.get("peak_gib"):
            truth = m["peak_gib"] * (1.1 if m.get("metric") == "allocated" else 1.0)
            e = float(est) / truth - 1 if est is not None else float("inf")
            errors[r["kind"]].append(e)
            layer[owner].append(e)
            if args.v:
                print(f"  {r['id']:>22} {r['kind']:18} {owner:9} est {est} truth {truth:.1f} ({e:+.0%})")
        elif r["status"] != "measured":
            b = m.get("bound_gib") or m.get("peak_gib")
            good = est is not None and b is not None and ((est > b) if r["status"] == "oom" else (est <= b))
            bounds[r["kind"]].append(bool(good))
            if args.v and not good:
                print(f"  {r['id']:>22} {r['status']}: est {est} bound {b}")

    def row(key: str, errs: list[float]) -> str:
        med = statistics.median(abs(e) for e in errs)
        band = sum(-0.10 <= e <= 0.25 for e in errs) / len(errs)
        return f"| {key} | {len(errs)} | {med:.1%} | {band:.0%} | {min(errs):+.0%} | {max(errs):+.0%} |"

    print("\n| stage (data kind) | n | median abs error | in band (-10..+25%) | worst under | worst over |")
    print("|---|---|---|---|---|---|")
    for key in sorted(errors):
        print(row(key, errors[key]))
    for key in sorted(layer):
        print(row(f"all rows estimated by engine/{key}", layer[key]))
    print(row("all measured", [e for v in errors.values() for e in v]))
    print("\n| bounds (oom above, fits under) | right |\n|---|---|")
    for key in sorted(bounds):
        print(f"| {key} | {sum(bounds[key])}/{len(bounds[key])} |")
    print(f"| all | {sum(sum(v) for v in bounds.values())}/{sum(len(v) for v in bounds.values())} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
