"""Conversation: a follow-up ("а если 8k контекст?", "and on two of them?") changes one thing of the previous
question. The question behind a chat's last answer and behind each answer message is linked in the storage
(SQLite, or Redis shared by the replicas), so a follow-up finds it after a restart and on any replica.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.answer import asks_a_price
from engine.edits import merge_follow_up
from engine.parse import FollowUp
from engine.schema import Request

if TYPE_CHECKING:
    from bot.storage import Storage


def last_key(chat_id: int) -> str:
    """The link to the question behind a chat's last answer."""
    return f"chat:{chat_id}"


def message_key(chat_id: int, message_id: int) -> str:
    """The link to the question behind one answer message (what a reply to it changes)."""
    return f"msg:{chat_id}:{message_id}"


@dataclass(frozen=True)
class FollowedUp:
    previous: Request | None  # None: a follow-up with no answer before it to change
    request: Request  # the previous question with the follow-up's change (else the text on its own)


async def follow_up(text: str, followed: FollowUp, store: Storage, keys: list[str],
                    qid: str | None = None) -> FollowedUp | None:
    """The previous question `text` (read as `followed`: engine.parse.read_question) changes one thing of, looked
    up by the first link of `keys` that is stored (then `qid`, the id on the replied answer's keyboard); None when
    `text` is not a follow-up, or its change makes no possible question; `previous` None when there is no answer
    before it to change."""
    if not followed.is_follow_up:
        return None
    if followed.changes.model is None:
        from bot.hub.ids import find_hub_id

        if find_hub_id(text):  # "acme/custom-llama qlora h100": a new question about a model on the Hub
            return None
    previous = None
    for key in keys:
        found = await store.get_link(key)
        if found is not None and (previous := await store.get_request(found)) is not None:
            break
    if previous is None and qid is not None:
        previous = await store.get_request(qid)
    if previous is None:
        # a size that is not real ("1000000B qlora h100") is a question of its own, answered as such
        orphan = followed.changes.model is None and not followed.changes.error and not asks_a_price(followed.changes)
        return FollowedUp(None, followed.changes) if orphan else None
    try:
        return FollowedUp(previous, merge_follow_up(previous, followed))
    except ValueError:
        return None  # the change makes no possible question: answer the text on its own


async def remember(store: Storage, chat_id: int, message_id: int | None, qid: str) -> None:
    """Link the chat's last answer (and the answer message) to its question, for the follow-ups."""
    await store.set_link(last_key(chat_id), qid)
    if message_id is not None:
        await store.set_link(message_key(chat_id, message_id), qid)
