"""Compile the gettext catalogs: `python -m bot.i18n compile` (run by the build and by CI).

At run time a missing .mo is compiled from its .po in memory (bot/views/render.py), so a
checkout works before this step too; the compiled files are build outputs, never committed.
"""

from __future__ import annotations

import sys

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

from bot.views.render import LANGUAGES, LOCALES


def compile_catalogs() -> list[str]:
    written = []
    for lang in LANGUAGES:
        base = LOCALES / lang / "LC_MESSAGES"
        with (base / "messages.po").open("rb") as f:
            catalog = read_po(f, locale=lang)
        with (base / "messages.mo").open("wb") as f:
            write_mo(f, catalog)
        written.append(str(base / "messages.mo"))
    return written


if __name__ == "__main__":
    if sys.argv[1:] != ["compile"]:
        sys.exit("usage: python -m bot.i18n compile")
    for path in compile_catalogs():
        print(path)
