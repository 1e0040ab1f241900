"""The enrich step of a reply: a question's model gets its architecture from a pasted config.json or from the
config.json of a Hugging Face id the catalog lacks.

Every source obeys the request's bounds (`bot.config_bounds.within_bounds`): an absurd config, pasted, uploaded or
fetched, gets the answer an absurd size in words gets. The Hub part imports lazily, so that `gpu-advisor ask`
runs without aiohttp.
"""

from __future__ import annotations

import asyncio
import html
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.config_bounds import within_bounds
from bot.views.messages import t
from engine.catalog import find_model
from engine.parse import parse
from engine.schema import ModelConfig, ModelRef, Request

if TYPE_CHECKING:
    from bot import hub
    from bot.config import BotConfig

log = logging.getLogger(__name__)

HUB_TIMEOUT_S = 3.0


def hub_reason(lang: str, reason: str) -> str:
    words = {
        "not_found": t(lang, "not found"), "gated": t(lang, "gated: access must be requested"),
        "offline": t(lang, "the Hub is unreachable"), "timeout": t(lang, "no answer in time"),
        "invalid": t(lang, "its config.json is unusable"),
    }
    return words.get(reason, reason)


def config_from_text(text: str) -> ModelConfig | None:
    """A ModelConfig from a pasted config.json, or None."""
    from bot import hub

    if "{" not in text:
        return None
    return hub.parse_pasted_config(text)


def with_model(request: Request, model: ModelRef) -> Request:
    """`request` about `model` (an estimate unless it asks something else), within the request's bounds."""
    data = request.model_dump()
    data["model"] = model.model_dump()
    data["error"] = None
    if data.get("intent") in (None, "help"):
        data["intent"] = "estimate"
    return within_bounds(Request.model_validate(data))


def request_from_config(cfg: ModelConfig, caption: str, name: str) -> Request:
    """The question a config.json (with an optional caption: method, GPU, context) stands for."""
    base = parse(caption) if caption.strip() else Request()
    return with_model(base, ModelRef(name=name[:200], config=cfg))


def may_fetch(text: str, request: Request) -> bool:
    """Whether `enrich` may go to the network (a pasted config or a Hub id the catalog lacks)."""
    if text.lstrip().startswith("{"):
        return True
    if "/" not in text:
        return False
    return request.model is None or find_model(request.model.name) is None


@dataclass
class Enriched:
    request: Request
    note: str | None = None  # one short sentence about where the architecture came from


async def enrich(text: str, request: Request, config: BotConfig, hub_cache: hub.ConfigCache | None,
                 lang: str) -> Enriched:
    """Use a pasted config.json, or fetch the config of a Hub id the catalog does not know."""
    from bot import hub

    pasted = config_from_text(text) if text.lstrip().startswith("{") else None
    if pasted is not None:
        return Enriched(request_from_config(pasted, "", "config.json"),
                        t(lang, "Architecture from the config.json you sent."))
    model_id = hub.find_hub_id(text)
    if not model_id or (request.model is not None and find_model(request.model.name) is not None):
        return Enriched(request)
    token = config.hf_token.get_secret_value() if config.hf_token else None
    try:
        result = await asyncio.wait_for(
            hub.fetch_config(model_id, endpoint=config.hf_endpoint, token=token, timeout=HUB_TIMEOUT_S,
                             cache=hub_cache),
            timeout=HUB_TIMEOUT_S + 1.0)
        reason, cfg, params_b = result.reason, result.config, result.params_b
    except Exception as exc:  # slow, or a bug in the fetcher: answer from the name anyway
        log.info("hub fetch failed: %s", type(exc).__name__)
        reason, cfg, params_b = "timeout", None, None
    if cfg is None:
        return Enriched(request, t(lang, "Could not read the config of %(id)s on Hugging Face (%(reason)s): "
                                         "estimated by the size in its name.", id=html.escape(model_id),
                                   reason=hub_reason(lang, reason)))
    return Enriched(with_model(request, ModelRef(name=model_id[:200], params_b=params_b, config=cfg)),
                    t(lang, "Architecture from config.json of %(id)s on Hugging Face.", id=html.escape(model_id)))
