"""The wheel's build step that compiles the message catalogs (bot/locales/*/LC_MESSAGES/messages.po → .mo) and
keeps every TOML data file's parsed content as JSON beside it (engine/datafiles.py: a read-only install reads
those instead of parsing the TOML at each start).

setuptools runs it as its `build_py` command (pyproject.toml, [tool.setuptools.cmdclass]), so every wheel, the
Docker image's included, carries compiled catalogs whatever the checkout had; Babel is a build requirement.
The .mo files are build outputs (.gitignore); `python -m bot.i18n compile` writes the same ones in a checkout.
"""

from __future__ import annotations

from pathlib import Path

from setuptools.command.build_py import build_py


def compile_po(po: Path, mo: Path) -> None:
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    with po.open("rb") as f:
        catalog = read_po(f, locale=po.parent.parent.name)
    mo.parent.mkdir(parents=True, exist_ok=True)
    with mo.open("wb") as f:
        write_mo(f, catalog)


class BuildPy(build_py):
    """setuptools' build_py, then each .po of the package compiled next to its copy in the build folder, and each
    TOML data file's JSON copy written into its __pycache__ there."""

    def run(self) -> None:
        super().run()
        for po in sorted(Path("bot", "locales").glob("*/LC_MESSAGES/messages.po")):
            mo = Path(self.build_lib) / po.with_suffix(".mo")
            compile_po(po, mo)
            self.announce(f"compiled {po} -> {mo}", level=2)
        from engine.datafiles import compile_toml  # the source tree's (the build runs in it); standard library only

        for toml in sorted(Path(self.build_lib).rglob("*.toml")):
            self.announce(f"kept {toml} as {compile_toml(toml)}", level=2)
