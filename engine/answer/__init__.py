"""Request → Answer: the one entry point the bot and the command line call for a reply (a serving question's
answer in engine/answer/serving.py).

The verdict is decided here, once, with the fit rule of `engine.fit`; views only word what this returns.
"""

from __future__ import annotations

from datetime import date

from engine import posttrain, pricing, speed
from engine.answer.models_fit import models_answer
from engine.answer.serving import asked_kv_gib as asked_kv_gib  # the contract reads these here
from engine.answer.serving import serving_answer
from engine.answer.serving import serving_breakdown as serving_breakdown
from engine.catalog import find_gpu, reference_of
from engine.fit import NO_HEADROOM, capacity, fits, need_gb, tight
from engine.memory import fused_loss_alternative
from engine.parse.money import WEEKDAY_PREFIX
from engine.plan import plan
from engine.plan.budget import within_limits
from engine.plan.context import longest_context
from engine.plan.search import asked_arrangements
from engine.scenario import ScenarioError, hardware_conflicts, request_gpu
from engine.schema import (
    SHOWN_PLANS,
    Answer,
    Arrangement,
    Assumption,
    Breakdown,
    Change,
    ContextFit,
    ErrorAnswer,
    GpuLine,
    Limits,
    LineRole,
    MarketAnswer,
    Note,
    Plan,
    PlanResult,
    PostTrainAnswer,
    PostTrainResult,
    PriceOptions,
    PriceRange,
    Rental,
    Request,
    Scenario,
    TrainingAnswer,
    Verdict,
    error_keys,
)
from engine.schema.request import ALST_RECIPE
from engine.serving import is_serving_request

# GPUs a chart draws next to the asked and planned ones, so that the need reads against familiar sizes.
COMMON_GPUS = ("RTX 4090", "A100 80GB SXM", "H100 SXM", "H200 SXM")


def on_calendar(request: Request, today: date | None) -> Request:
    """A weekday deadline ("к понедельнику", "by Friday": Request.assumed "deadline_weekday:<0-6>") counted from
    `today`, the date the door passes (date.today() there; the engine never reads the clock): the whole days to that
    weekday (a week when it is today), in hours, said as counted on the calendar. Without a date the parser's
    WEEKDAY_HOURS stays, said as not counted."""
    day = next((a.removeprefix(WEEKDAY_PREFIX) for a in request.assumed if a.startswith(WEEKDAY_PREFIX)), None)
    if today is None or day is None or not day.isdigit() or request.deadline_hours is None:
        return request
    days = (int(day) - today.weekday()) % 7 or 7
    assumed = [a for a in request.assumed if a != "deadline_hours"] + ["deadline_calendar"]
    return request.model_copy(update={"deadline_hours": days * 24.0, "assumed": assumed[:16]})


def answer(request: Request, prices: PriceOptions | None = None, today: date | None = None) -> Answer:
    """The complete answer to a parsed (or keyboard-altered) request; never raises on bad input. `today` counts a
    weekday deadline on the calendar (`on_calendar`)."""
    request = on_calendar(request, today)
    if request.model is None:
        market = market_answer(request, prices)
        if market is not None:
            return market
        fitting = models_answer(request, lambda r: answer(r, prices, today))
        if fitting is not None:
            return fitting
        return ErrorAnswer(request=request, errors=model_errors(request))
    if is_serving_request(request):  # a serving engine sizes it (engine.serving), never the training planner
        served = serving_answer(request, prices)
        asked_gpu = request.gpus[0].name if request.gpus else None
        served.notes = [*served.notes, *said_notes(request, request.model.name or "", asked_gpu, served.currency)]
        served.rental = asked_rental(request, prices)
        return served
    try:
        if posttrain.applies(request):
            from engine.posttrain import planner as posttrain_plan  # the post-training planner: only its questions

            return with_said(posttrain_answer(posttrain_plan.with_rollout(request), prices), request, prices)
        result = plan(request, prices)
        if long_context_instead(request, result):
            return with_said(posttrain_answer(request, prices), request, prices)
    except ScenarioError as exc:
        return ErrorAnswer(request=request, errors=[Note(key="no_estimate", params={
            "reason": str(exc), "why": exc.key, **exc.params})])
    named = asked_arrangements(request)
    asked = named[0] if named else None
    b, s = result.breakdown, result.scenario
    cheaper = result.alternatives[0] if result.asked_fits and result.alternatives else None
    shown = [*result.plans[:SHOWN_PLANS], *([cheaper] if cheaper else result.alternatives)]
    gpu = find_gpu(asked.gpu, asked.memory_gb) if asked else None
    conflicts = hardware_conflicts(s, gpu, request) if gpu is not None and not result.comparison else []
    said, fix = verdict(result, b, asked, conflicts, full_asked=request.method == "full")
    fused = fused_loss_alternative(s) if s.framework_assumed else None
    fixed = fix_plan(request, fix, asked, prices) if said == "fits_with_changes" else None
    return TrainingAnswer(
        fix_plan=fixed,
        request=request, scenario=s, breakdown=b,
        verdict=said, asked=asked, fix=fix, conflicts=conflicts,
        capacity_gib=capacity(asked.gpu, asked.memory_gb) if asked else 0.0,
        fused_loss_gb=round(need_gb(fused), 2) if fused is not None and fused.total < b.total - 0.05 else None,
        need_gb=need_gb(b), cluster_gb=need_gb(b) * s.gpu_count,
        cpu_ram_gb=b.cpu_ram * min(s.gpu_count, speed.gpus_per_node()),
        plans=result.plans, changes=result.changes, comparison=result.comparison,
        comparison_fix=result.comparison_fix,
        alternatives=[] if cheaper else result.alternatives, cheaper=cheaper,
        notes=[*result.notes, *said_notes(request, s.arch.name, asked.gpu if asked else None, result.currency)],
        assumptions=[*s.assumptions, *parsed_assumptions(request)],
        monthly=result.monthly if not result.comparison else None,
        price_date=newest_price_date(shown), old_prices=stale_prices(shown), currency=result.currency,
        rank_by=result.rank_by, tokens=result.tokens,
        shape_reference=None if s.arch.known else reference_of(s.arch),
        capacity=capacity_lines(b, asked, result),
        limits=limits_with_faster(request, shown, prices or PriceOptions(), asked),
        rental=asked_rental(request, prices),
        context_fit=asked_context(request, s, asked),
    )


def asked_context(request: Request, s: Scenario, asked: Arrangement | None) -> ContextFit | None:
    """«какой максимальный контекст влезет для лоры 8b на 4090»: the longest context the GPUs asked hold for the
    job (supervised training; a preference or RL stage has its own sequences), and with a fused cross-entropy when
    no stack was named and that reaches further."""
    if "context" not in request.asks or asked is None or s.method == "inference" or (request.stage or "sft") != "sft":
        return None
    room = capacity(asked.gpu, asked.memory_gb)
    plain = longest_context(s, room)
    fused = longest_context(s, room, "fused_linear") if s.framework_assumed and not s.fused_loss else 0
    return ContextFit(tokens=plain, fused_tokens=fused if fused > plain else None)


# Request fields a change may set that the planner takes as said (engine.memory's method change: QLoRA, its 4-bit
# base and paged optimizer)
REQUEST_CHANGES = ("method", "bits", "optimizer")


def fix_plan(request: Request, fix: Change | None, asked: Arrangement | None,
             prices: PriceOptions | None) -> Plan | None:
    """The GPUs asked after the verdict's change of method («лора 8b на 4080» → QLoRA on the one card), planned the
    way every plan is (engine.plan on the changed request), so that the first line times what it tells the user to
    do instead of only the other arrangement's hours. None when the change is not a change of method or the changed
    job still needs another arrangement."""
    if fix is None or asked is None or "method" not in fix.update:
        return None
    update = {k: v for k, v in fix.update.items() if k in REQUEST_CHANGES}
    try:
        changed = plan(request.model_copy(update=update), prices)
    except ScenarioError:
        return None
    return next((p for p in changed.plans if (p.gpu, p.count) == (asked.gpu, asked.count) and p.hours is not None),
                None)


def asked_rental(request: Request, prices: PriceOptions | None) -> Rental | None:
    """«сколько стоит инфер 70б на 2 h100 в месяц», "how much a week of 8xH100 for serving 70B": a period priced
    for the GPUs named, with no amount of data to price a run by; the model's fit comes after it."""
    if request.rent_hours is None or "money" not in request.asks or request.tokens or len(request.gpus) != 1 \
            or request.gpus[0].name is None:
        return None
    options = prices or PriceOptions()
    currency = request.currency if request.currency in ("USD", "RUB") else options.currency
    gpu = find_gpu(request.gpus[0].name, request.gpus[0].memory_gb)
    if gpu is None:
        return None
    try:
        found = pricing.market_range(gpu.name, None, currency, options.usd_rub)
    except (LookupError, ValueError):
        return None
    return rental_cost(request, found, currency)


def limits_with_faster(request: Request, shown: list[Plan], prices: PriceOptions,
                       asked: Arrangement | None = None) -> Limits | None:
    """The budget and deadline check; when no plan shown (the cheapest) meets the deadline, the plans ranked by
    time are checked too, so that "за сутки" finds the 2×H100 that does it instead of saying none does. The plan on
    the GPUs asked is kept beside (`asked`): the first line says whether that one meets them."""
    limits = _limits_found(request, shown, prices)
    if limits is not None and asked is not None:
        limits.asked = next((p for p in shown if (p.gpu, p.count) == (asked.gpu, asked.count)), None)
    return limits


def _limits_found(request: Request, shown: list[Plan], prices: PriceOptions) -> Limits | None:
    limits = within_limits(request, shown, prices)
    if limits is None or limits.meeting or limits.unchecked or request.deadline_hours is None:
        return limits
    try:
        fast = plan(request.model_copy(update={"rank_by": "time"}), prices.model_copy(update={"rank_by": "time"}))
    except ScenarioError:
        return limits
    again = within_limits(request, fast.plans, prices)
    if again is not None and again.meeting:
        return again
    if again is not None and again.fastest is not None and limits.fastest is not None \
            and (again.fastest.hours or 0.0) < (limits.fastest.hours or 0.0):
        limits.fastest = again.fastest
    return limits


def asks_a_price(request: Request) -> bool:
    """"сколько стоит H100", "how much is an A100 per hour?": one named GPU, no model, money asked."""
    return (request.model is None and ("money" in request.asks or request.rent_hours is not None)
            and len(request.gpus) == 1
            and request.gpus[0].name is not None)


def market_answer(request: Request, prices: PriceOptions | None) -> MarketAnswer | None:
    """A price question without a model: the GPU's market range per GPU-hour (what /price shows), in the currency
    the question asks (else the chat's), with the chat's own price; None when it is not one, or there are no prices
    (then the answer is the usual "no model" one)."""
    if not asks_a_price(request):
        return None
    options = prices or PriceOptions()
    asked = request.currency if request.currency in ("USD", "RUB") else None
    currency = asked or options.currency
    gpu = find_gpu(request.gpus[0].name, request.gpus[0].memory_gb)
    if gpu is None:
        return None
    try:
        found = pricing.market_range(gpu.name, None, currency, options.usd_rub)
    except (LookupError, ValueError):
        return None
    own = None
    if currency == options.currency:
        own = next((v for k, v in options.overrides.items() if find_gpu(k) == gpu), None)
    return MarketAnswer(request=request, market=found.model_copy(deep=True), own_price=own, currency=found.currency,
                  notes=said_notes(request, "", gpu.name, found.currency),
                  rental=rental_cost(request, found, currency))


def rental_cost(request: Request, found: PriceRange, currency: str) -> Rental | None:
    """"неделя 8xh100", "месяц a100", "100 часов в месяц h100": the period at the hourly market prices for all the
    GPUs, and, for a month, the cheapest monthly offer per GPU against hourly at the stated use."""
    hours = request.rent_hours
    if hours is None:
        return None
    count = request.gpus[0].count
    cost = {k: round(getattr(found, k) * count * hours, 2) for k in ("min", "typical", "max")}
    monthly = None
    if request.rent_monthly and hours <= 744:
        try:
            monthly = pricing.monthly_vs_hourly(found.gpu, hours, currency=currency)  # type: ignore[arg-type]
        except (LookupError, ValueError):
            monthly = None
    return Rental(count=count, hours=hours, cost=cost, monthly=monthly)


def model_errors(request: Request) -> list[Note]:
    """Why there is no estimate when the question gives no model: what the parser could not use ("-7B" is a
    negative number, "10^100B" a size out of range), then the missing model itself."""
    return [*(Note(key="request_error", params={"reason": k}) for k in error_keys(request.error)),
            Note(key="no_model")]


# The price summary's window (gpu-price-summary.csv: on-demand points 2024-2026); a GPU whose newest figure is older
# (T4 and A10G: one AWS spot price of 2021-12, nothing newer in shared/data/gpu-prices.csv) is named with its date
PRICE_WINDOW_START = "2024"


def newest_price_date(shown: list[Plan]) -> str | None:
    """The answer's one "prices as of" date: the newest of the plans shown (a price the chat gave has none)."""
    return max((p.price_date for p in shown if p.price_date and p.price_date != "given"), default=None)


def stale_prices(shown: list[Plan]) -> dict[str, str]:
    """GPU → price date of the plans shown whose newest price is older than the summary's window: the answer's one
    "prices as of" line must not lend them the date of the others."""
    return {p.gpu: p.price_date for p in shown
            if p.price_date and p.price_date != "given" and p.price_date < PRICE_WINDOW_START}


def with_said(a: PostTrainAnswer, request: Request, prices: PriceOptions | None) -> PostTrainAnswer:
    """A post-training answer with what the question said around the estimate (notes, budget, deadline)."""
    a.notes = [*a.notes, *said_notes(request, a.scenario.arch.name, a.asked.gpu if a.asked else None, a.currency)]
    known = {x.key for x in a.assumptions}
    a.assumptions = [*a.assumptions, *(x for x in parsed_assumptions(request) if x.key not in known)]
    a.limits = within_limits(request, [*a.plans, *a.alternatives], prices or PriceOptions())
    a.context_fit = asked_context(request, a.scenario, a.asked)
    return a


# Request.assumed entries the parser filled from what the question implied, as the answer's assumptions (Request field
# → assumption key); "model" and "gpus" are said as notes (said_notes)
PARSED_DEFAULTS = {"quantization": "quantization", "context_parallel": "context_parallel",
                   "budget.currency": "budget_currency", "deadline_hours": "deadline_weekday",
                   "deadline_calendar": "deadline_calendar", "alst": "alst_recipe", "chinchilla": "chinchilla_tokens"}


def parsed_assumptions(request: Request) -> list[Assumption]:
    """The defaults the parser picked ("q4" → llama.cpp's Q4_K_M, "DeepSpeed Ulysses" on 8 GPUs → CP ×8, a budget
    without a currency → the language's), each shown in the Assumptions line like the engine's own."""
    out = [Assumption(key="moe_active", value=moe_active(request))] if moe_active(request) else []
    for said in request.assumed:
        key = PARSED_DEFAULTS.get(said)
        value = request.budget.currency if said == "budget.currency" and request.budget else \
            request.deadline_hours if said == "deadline_calendar" else alst_switches(request) if said == "alst" else \
            request.tokens if said == "chinchilla" else \
            getattr(request, said, None) if key else None
        if key is not None and value is not None:
            out.append(Assumption(key=key, value=value))
    return out


def alst_switches(request: Request) -> str | None:
    """The ALST recipe's switches the job runs with, "+"-joined in ALST_RECIPE's order (CONTRACT's
    "alst_recipe=full+tiled_mlp"; the method by its value): those the question turned off are not said as assumed."""
    return "+".join(str(value) if name == "method" else name for name, value in ALST_RECIPE
                    if getattr(request, name) == value) or None


def moe_active(request: Request) -> str | None:
    """"30b moe": the active size the parser assumed (the catalog's typical MoE share), as "active/total" in B."""
    m = request.model
    if "model.active_params_b" not in request.assumed or m is None or not m.active_params_b or not m.params_b:
        return None
    return f"{m.active_params_b:g}/{m.params_b:g}"


def said_notes(request: Request, model: str, gpu: str | None, currency: str) -> list[Note]:
    """What the question asked that is not modelled (the answer is for what is), and what was assumed for a
    family named without a size or a notebook service named without a GPU; a currency without prices (EUR)."""
    notes = [Note(key="unsupported", params={"what": key}) for key in request.unsupported]
    if "method" in request.assumed:  # a model on a GPU with no training word: read as running it (engine.parse)
        notes.append(Note(key="assumed_inference"))
    if request.currency is not None and request.currency not in ("USD", "RUB"):
        notes.append(Note(key="unpriced_currency", params={"asked": request.currency, "shown": currency}))
    if "model" in request.assumed:
        notes.append(Note(key="assumed_model", params={"model": model}))
    if "gpus" in request.assumed and gpu is not None:
        notes.append(Note(key="assumed_gpu", params={"gpu": gpu}))
    return notes


def verdict(result: PlanResult, b: Breakdown, asked: Arrangement | None,
            conflicts: list[str] | None = None, full_asked: bool = False) -> tuple[Verdict | None, Change | None]:
    """fits / tight / fits_with_changes / no_fit on the GPUs asked (compare for several, None for none), with
    one rule against the capacity the answer shows (engine.fit): tight under 10 % to spare, or when the
    allocator had to give back its cache. fits_with_changes names the change (or combination) that fits on
    the GPUs asked, the first listed: the cheapest."""
    if result.comparison:
        return "compare", None
    if asked is None or result.asked_fits is None:
        return None, None
    # full fine-tuning asked: a switch to LoRA/QLoRA is an alternative (listed under the changes), never the fix
    on_card = [c for c in result.changes if _on_the_gpus_asked(c) and c.fits and not (full_asked and changes_method(c))
               and not _offload_the_plans_rank_out(c, result, asked)]
    # a comfortable fix before one that leaves under 10 % free (Change.tight, which the headline then says)
    fix = next((c for c in on_card if not c.tight), on_card[0] if on_card else None)
    if conflicts:
        # the GPU cannot run it as asked (QLoRA without bitsandbytes, ...): the fix is the way that runs there
        return "no_fit", fix
    room = capacity(asked.gpu, asked.memory_gb)
    if fits(b, room, NO_HEADROOM):
        return ("tight" if tight(b, room) else "fits"), None
    return ("fits_with_changes" if fix is not None else "no_fit"), fix


def changes_method(c: Change) -> bool:
    """The change (or a part of the combination) trains another way: LoRA or QLoRA instead of the method asked."""
    return any(p.key == "method" for p in (c.parts or [c]))


def _on_the_gpus_asked(c: Change) -> bool:
    return c.key != "more_gpus"


def _offload_the_plans_rank_out(c: Change, result: PlanResult, asked: Arrangement | None) -> bool:
    """The parameters offloaded too on the one GPU asked (ZeRO-3 offload_param), where the plans list no offloaded
    arrangement of that GPU: 70B fully fine-tuned streams its weights over PCIe every step, and the plans rank that
    out for several nodes; the fix would name what the fit list does not (engine.plan.advice adds the change where
    the optimizer's offload is not enough)."""
    if asked is None or c.key != "cpu_offload" or c.update.get("sharding") != "zero3" or asked.count != 1:
        return False
    return not any(p.gpu == asked.gpu and p.count == 1 and "cpu_offload" in p.techniques for p in result.plans)


def capacity_lines(b: Breakdown, asked: Arrangement | None, result: PlanResult) -> list[GpuLine]:
    """The GPUs to draw against the need, each with whether the job as asked fits on it: the asked one,
    those of the plans, and the common ones."""
    picked: list[tuple[str, float, LineRole]] = []
    if asked is not None:
        picked.append((asked.gpu, asked.memory_gb, "asked"))
    picked += [(p.gpu, p.memory_gb, "plan") for p in result.plans]
    picked += [(g.name, g.memory_gb, "common") for g in (find_gpu(n) for n in COMMON_GPUS) if g is not None]
    return [GpuLine(gpu=name, memory_gb=memory, fits=fits(b, capacity(name, memory), NO_HEADROOM), role=role)
            for name, memory, role in picked]


# ---- post-training and long context (engine.posttrain) ---------------------------------------------------------


def long_context_instead(request: Request, result: PlanResult) -> bool:
    """A fine-tuning request that no arrangement (or not the GPU asked) fits because of its sequence: answered with
    context parallelism, a fused loss and ALST's offload considered (seed claim S19), not with "no number of GPUs
    fits" or a plain "does not fit"."""
    if request.stage not in (None, "sft", "pretrain") or result.comparison:
        return False
    gpu = request_gpu(request)
    if gpu is not None and hardware_conflicts(result.scenario, gpu, request):
        return False  # nothing fits because the GPU cannot run it (QLoRA on Apple), not because of the length
    if result.plans and result.asked_fits is not False:
        return False  # a plain plan exists: kept unless a long sequence does not fit on the GPU asked
    from engine.posttrain import planner as posttrain_plan  # the post-training planner: only when a plan is missing

    if result.plans and not posttrain_plan.long_sequence(request):
        return False
    return posttrain_plan.is_long_context(request)


def posttrain_verdict(result: PlanResult, b: Breakdown, asked: Arrangement | None,
                      rollout_fails: bool = False) -> tuple[Verdict | None, Change | None]:
    """engine.answer's verdict, with a plan on the GPUs asked that needs changes (8-bit Adam, ZeRO-3, CP) counted
    as the change that fits: the headline names that plan. A rollout that cannot run as set (vLLM's share too small
    for its weights, or beside the trainer on one card) does not fit as asked, whatever the memory sum says: the
    fix is a change that lets it run."""
    said, fix = verdict(result, b, asked)
    if rollout_fails and said in ("fits", "tight") and asked is not None:
        on_card = [c for c in result.changes if _on_the_gpus_asked(c) and c.fits]
        fix = next((c for c in on_card if not c.tight), on_card[0] if on_card else None)
        return ("fits_with_changes" if fix is not None else "no_fit"), fix
    if said == "no_fit" and asked is not None and any(
            p.gpu == asked.gpu and p.count == asked.count and p.techniques for p in result.plans):
        return "fits_with_changes", fix
    return said, fix


def cluster_gb(b: Breakdown, pt: PostTrainResult, gpus: int) -> float:
    """All the job's GPUs together: the trainers at the training peak, a vLLM server (server mode) on GPUs of its
    own at its use, not at the trainers' (`gpus` counts both)."""
    if pt.rollout_gpus and pt.rollout_gpu_total is not None:
        return need_gb(b) * pt.train_gpus + pt.rollout_gpu_total * pt.rollout_gpus  # its share holds its context
    return need_gb(b) * gpus


def posttrain_answer(request: Request, prices: PriceOptions | None) -> PostTrainAnswer:
    """The answer of a post-training (or long-context) request: plans judged by the post-training peak, the
    verdict by engine.fit's rule on it, the post-training result for the view to word."""
    from engine.posttrain import planner as posttrain_plan

    said = request
    request = posttrain_plan.default_sharding(request)
    result = posttrain_plan.plan(request, prices)
    pt = posttrain.posttrain_result(request)
    if request.sharding != said.sharding:  # a default of this path, shown as one
        pt.assumptions.append(Assumption(key="sharding", value=str(request.sharding)))
        result.scenario.assumptions.append(Assumption(key="sharding", value=str(request.sharding)))
    named = asked_arrangements(request)
    asked = named[0] if named else None
    b, s = result.breakdown, result.scenario
    pt = posttrain_plan.adopt_plan(pt, request, result.plans, asked)
    result.changes = posttrain_plan.changes(pt, asked)
    cheaper = None
    shown = [*result.plans[:SHOWN_PLANS], *result.alternatives]
    gpus = max(s.gpu_count, pt.train_gpus)
    from engine.posttrain.advice import rollout_fails

    judged, fix = posttrain_verdict(result, b, asked, rollout_fails(pt))
    return PostTrainAnswer(
        request=request, scenario=s, breakdown=b, verdict=judged, fix=fix, asked=asked,
        capacity_gib=capacity(asked.gpu, asked.memory_gb) if asked else 0.0,
        need_gb=need_gb(b), cluster_gb=cluster_gb(b, pt, gpus),
        cpu_ram_gb=b.cpu_ram * min(gpus, speed.gpus_per_node()),
        plans=result.plans, changes=result.changes, comparison=result.comparison,
        alternatives=result.alternatives, cheaper=cheaper, notes=result.notes, assumptions=s.assumptions,
        price_date=newest_price_date(shown), old_prices=stale_prices(shown), currency=result.currency,
        rank_by=result.rank_by,
        tokens=result.tokens,
        shape_reference=None if s.arch.known else reference_of(s.arch),
        capacity=capacity_lines(b, asked, result), posttrain=pt,
    )


# ---- serving -------------------------------------------------------------------------------------------------
