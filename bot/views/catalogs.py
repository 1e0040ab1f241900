"""The gettext catalogs (bot/locales): compiled .mo files when the build made them, else the .po compiled in memory.

`_`, `_n` translate in a given language; `N_` marks a message chosen at run time for extraction (bot/i18n.py).
"""

from __future__ import annotations

import gettext
import io
from functools import cache
from importlib.resources import files

LOCALES = files("bot") / "locales"  # inside the package: a checkout and an installed wheel alike
LANGUAGES = ("en", "ru")


@cache
def translations(lang: str) -> gettext.NullTranslations:
    """The compiled catalog when the build made one, else compiled from the .po in memory."""
    base = LOCALES / lang / "LC_MESSAGES"
    mo = base / "messages.mo"
    if mo.is_file():
        with mo.open("rb") as f:
            return gettext.GNUTranslations(f)
    po = base / "messages.po"
    if not po.is_file():
        return gettext.NullTranslations()
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    with po.open("rb") as f:
        catalog = read_po(f, locale=lang)
    buf = io.BytesIO()
    write_mo(buf, catalog)
    buf.seek(0)
    return gettext.GNUTranslations(buf)


def N_(message: str) -> str:
    """Marks a message chosen at run time for extraction (bot/i18n.py); translated where it is shown."""
    return message


def _(lang: str, message: str) -> str:
    return translations(lang).gettext(message)


def _n(lang: str, singular: str, plural: str, n: float) -> str:
    return translations(lang).ngettext(singular, plural, int(n))
