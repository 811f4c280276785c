"""`swiftbench plugin`: where the ms-swift plugin of the recipes is, so that a copied command can name it.

    swift sft ... --external_plugins "$(swiftbench plugin)" --callbacks ...
    swiftbench plugin --copy DIR     # a copy of the file in DIR (a machine without swiftbench needs only that file)
"""
from __future__ import annotations

import shutil
from pathlib import Path

from experiments.base.errors import InputError
from experiments.recipes.recipes import plugin_path


def register(sub) -> None:
    p = sub.add_parser("plugin", help="the path of the ms-swift plugin a copied recipe passes with --external_plugins",
                       description=__doc__.splitlines()[0])
    p.add_argument("--copy", metavar="DIR", default=None,
                   help="copy the plugin file into DIR and print the copy's path")
    p.set_defaults(func=run)


def run(args) -> int:
    path = plugin_path()
    if args.copy is not None:
        dest = Path(args.copy)
        if not dest.is_dir():
            raise InputError(dest, "no such folder")
        target = dest / path.name
        try:
            shutil.copyfile(path, target)
        except OSError as exc:
            raise InputError(target, f"cannot write: {exc.strerror}") from None
        path = target.resolve()
    print(path)
    return 0
