"""swiftbench's one top-level package in site-packages: the installed wheel holds analysis/, experiments/, data/,
seeds/ and notebooks/ under swiftbench/, while the code imports them as top-level `analysis.…` and `experiments.…`
(as they sit in a checkout). Importing this package puts a finder first on sys.meta_path that resolves exactly those
five names to the folders beside this file, and only where they are there (an installed wheel) or where the build's
mapping puts `swiftbench.analysis` (an editable install); in a plain checkout it finds nothing and the checkout's own
folders are imported as before. The console script `swiftbench` is `main` below.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys

NAMES = ("analysis", "experiments", "data", "seeds", "notebooks")  # the packages the wheel maps under swiftbench/


class _Finder(importlib.abc.MetaPathFinder):
    """`analysis` (and the other NAMES) as the top-level package of the folder `swiftbench.analysis` is: the same
    files under the name the code imports; submodules are then found through its __path__ as usual."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in NAMES or path is not None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, __path__)  # the folders beside this file
        if spec is None:  # an editable install maps swiftbench.NAME elsewhere (its own finder knows where)
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                sub = finder.find_spec(f"{__name__}.{fullname}", __path__)
                if sub is not None and sub.origin and sub.submodule_search_locations:
                    return importlib.util.spec_from_file_location(
                        fullname, sub.origin, submodule_search_locations=list(sub.submodule_search_locations))
        return spec


def install() -> None:
    """Put the finder first on sys.meta_path (once): the installed packages win over same-named ones elsewhere."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


def main(argv: list[str] | None = None) -> int:
    """The `swiftbench` command: analysis.cli.main with the installed packages importable."""
    install()
    from analysis.cli import main as cli_main

    return cli_main(argv)


install()
