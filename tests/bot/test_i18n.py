"""The gettext catalogs cover every message of the code and the templates, in both languages."""

from __future__ import annotations

from babel.messages.pofile import read_po

from bot.i18n import POT, extract, untranslated


def test_every_message_has_a_russian_translation_with_all_plural_forms() -> None:
    assert untranslated("ru") == []


def test_the_committed_template_is_what_babel_extracts_now() -> None:
    with POT.open("rb") as f:
        committed = {m.id if isinstance(m.id, str) else m.id[0] for m in read_po(f) if m.id}
    current = {m.id if isinstance(m.id, str) else m.id[0] for m in extract() if m.id}
    assert committed == current, "run `python -m bot.i18n extract`"
