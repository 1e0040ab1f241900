"""A pasted text that is a launch command or a YAML/JSON training config, not a question: read as `check` reads a
file, the same in every door (a chat message, an inline query, `gpu-advisor ask`)."""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.configs import ReadResult
    from engine.schema import Request

HOSTILE = ("too_deep", "huge_number", "yaml_bomb")  # errors of a text that is surely meant as a config
_YAML_LINE = re.compile(r"^[A-Za-z_][\w.-]{0,80}:(\s|$)")
_FLAG = re.compile(r"(^|\s)--?[A-Za-z]")  # "--tp 4", "-m model.gguf": a command line has flags


def might_be_pasted(text: str) -> bool:
    """Whether a text could be a command or a config at all (flags, JSON, YAML lines): a question is answered
    without loading the config readers."""
    stripped = text.strip()
    return bool(stripped) and (stripped[0] in "{[" or _FLAG.search(stripped) is not None
                               or sum(1 for ln in stripped.splitlines() if _YAML_LINE.match(ln.strip())) >= 2)


def pasted_config(text: str) -> ReadResult | None:
    """What a pasted text reads as when it is a launch command or a YAML/JSON training config; None for a question
    (a model's config.json included: that is an architecture, answered by the question pipeline)."""
    from bot.enrich import config_from_text
    from engine.configs import read_config
    from engine.configs.readers.cmdline import looks_like_command

    stripped = text.strip()
    if not stripped:
        return None
    if looks_like_command(stripped):
        return read_config(stripped, None)
    lines = [ln for ln in stripped.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if stripped.startswith("["):  # a JSON list is no config, but a hostile one is named as such
        read = read_config(stripped, None)
        return read if read.error in HOSTILE else None
    if stripped.startswith("{"):
        if config_from_text(stripped) is not None:
            return None
    elif len(lines) < 2 or sum(1 for ln in lines if _YAML_LINE.match(ln)) < 2:
        return None
    read = read_config(stripped, None)
    if read.error in ("unknown_format", "invalid_yaml", "invalid_json", "not_a_mapping", "empty"):
        return None  # prose with colons, not a config
    return read


@functools.cache
def _nothing_read() -> Request | None:
    """What a JSON of unrelated keys reads as: the TrainingArguments defaults alone (JSON's catch-all flavour)."""
    from engine.configs import read_config

    return read_config('{"unrelated": 0}', "nothing.json").request


def understood(read: ReadResult) -> bool:
    """Whether the reader found any setting at all (a JSON of unrelated keys gives only its defaults)."""
    return read.request is not None and (read.format != "hf-args" or read.request != _nothing_read())


def checked(read: ReadResult) -> ReadResult:
    """The reading with its error said: a reading of nothing at all is an unknown format."""
    if read.request is not None and not understood(read):
        return read.model_copy(update={"error": "unknown_format"})
    return read


def checked_request(read: ReadResult) -> Request | None:
    """The request a reading (as `checked` returns it) describes, sized from its model id as `gpu-advisor check`
    reads it; None when it could not be read (its `error` says why)."""
    from engine.configs.bridge import sized_from_name

    if read.error or read.request is None:
        return None
    return sized_from_name(read.request)[0]
