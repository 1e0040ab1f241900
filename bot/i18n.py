"""The gettext catalogs: `python -m bot.i18n extract|update|check|compile`.

- `extract` writes bot/locales/messages.pot with Babel from the code (`_(lang, msg)`, `_n(lang, one, many, n)`,
  `t(lang, msg)`, `tn(lang, one, many, n)`, `N_(msg)` for messages chosen at run time) and the jinja2
  templates (`_()`, `ngettext()`).
- `update` merges the template into bot/locales/{en,ru}/LC_MESSAGES/messages.po, keeping translations.
- `check` exits 1 when a message has no Russian translation (or misses a plural form).
- `compile` writes the .mo files (the wheel build does it too, build_catalogs.py; they are build outputs,
  never committed).

At run time a missing .mo is compiled from its .po in memory (bot/views/catalogs.py), so a checkout
works before `compile` too.
"""

from __future__ import annotations

import sys
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_file
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

from bot.views.catalogs import LANGUAGES

SOURCES = Path(__file__).resolve().parent
LOCALES = SOURCES / "locales"  # the checkout's catalogs, which these tools write
# The language comes first in our helpers, so the message is the second argument.
CODE_KEYWORDS: dict[str, tuple[int, ...] | None] = {"_": (2,), "_n": (2, 3), "t": (2,), "tn": (2, 3), "N_": (1,)}
TEMPLATE_KEYWORDS: dict[str, tuple[int, ...] | None] = {"_": None, "gettext": None, "ngettext": (1, 2)}
POT = LOCALES / "messages.pot"


def extract() -> Catalog:
    catalog = Catalog(project="gpu-advisor", charset="utf-8")
    root = SOURCES.parent
    sources = [(p, "python", CODE_KEYWORDS) for p in sorted(SOURCES.rglob("*.py"))]
    sources += [(p, "jinja2.ext:babel_extract", TEMPLATE_KEYWORDS)
                for p in sorted((SOURCES / "views" / "templates").glob("*.j2"))]
    for path, method, keywords in sources:
        options = {"extensions": "jinja2.ext.i18n", "trim_blocks": "false"} if method != "python" else None
        for lineno, message, comments, context in extract_from_file(method, path, keywords=keywords,
                                                                     options=options):
            catalog.add(message, locations=[(str(path.relative_to(root)), lineno)], auto_comments=comments,
                        context=context)
    return catalog


def write_template() -> Path:
    with POT.open("wb") as f:
        write_po(f, extract(), omit_header=False, sort_output=False, width=120)
    return POT


def _po(lang: str) -> Path:
    return LOCALES / lang / "LC_MESSAGES" / "messages.po"


def update() -> list[str]:
    template = extract()
    written = []
    for lang in LANGUAGES:
        with _po(lang).open("rb") as f:
            catalog = read_po(f, locale=lang)
        catalog.update(template, no_fuzzy_matching=True)
        with _po(lang).open("wb") as f:
            write_po(f, catalog, width=120, ignore_obsolete=True)
        written.append(str(_po(lang)))
    return written


def untranslated(lang: str = "ru") -> list[str]:
    """Messages of the code and templates that the language's catalog lacks or leaves empty."""
    with _po(lang).open("rb") as f:
        catalog = read_po(f, locale=lang)
    missing = []
    for message in extract():
        if not message.id:
            continue
        found = catalog.get(message.id)
        strings = found.string if found is not None else None
        if isinstance(strings, tuple | list):
            complete = len(strings) == catalog.num_plurals and all(strings)
        else:
            complete = bool(strings)
        if not complete:
            missing.append(message.id if isinstance(message.id, str) else message.id[0])
    return missing


def compile_catalogs() -> list[str]:
    written = []
    for lang in LANGUAGES:
        with _po(lang).open("rb") as f:
            catalog = read_po(f, locale=lang)
        with (_po(lang).parent / "messages.mo").open("wb") as f:
            write_mo(f, catalog)
        written.append(str(_po(lang).parent / "messages.mo"))
    return written


def main(argv: list[str]) -> int:
    if argv == ["compile"]:
        print("\n".join(compile_catalogs()))
    elif argv == ["extract"]:
        print(write_template())
    elif argv == ["update"]:
        print("\n".join([str(write_template()), *update()]))
    elif argv == ["check"]:
        missing = untranslated("ru")
        for msgid in missing:
            print(f"untranslated (ru): {msgid}")
        return 1 if missing else 0
    else:
        print("usage: python -m bot.i18n extract|update|check|compile", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
