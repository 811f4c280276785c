"""`swiftbench plugin`: where the ms-swift plugin of the recipes is, so that a copied command can name it.

    swift sft ... --external_plugins "$(swiftbench plugin || echo swiftbench-not-installed)" --callbacks ...
    swiftbench plugin --copy DIR     # a copy of the file in DIR, made when missing (a machine without swiftbench
                                     # needs only that file)
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from experiments.base import userfiles
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
        target = dest / path.name
        if dest.resolve() == path.resolve().parent:  # the plugin's own folder: the file is already there
            print(path.resolve())
            return 0
        try:
            dest.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a file of that name, no permission, a full disk: one line, exit 2
            raise InputError(dest, f"cannot make the folder: {exc.strerror or exc}") from None
        try:
            mode = os.lstat(target).st_mode
        except FileNotFoundError:
            mode = None
        except OSError as exc:
            raise InputError(target, f"cannot be read ({userfiles.reason(exc)})") from None
        if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):  # a FIFO, a folder, a device
            raise InputError(target, f"is {userfiles.kind_of(mode)}: nothing was written")
        # a new file renamed into place: a symlink there is replaced, the file it points to left as it is, and a
        # failure (a full disk) leaves what was there whole
        userfiles.write_atomic(target, path.read_bytes(), mode=0o666 & ~_umask())
        path = target.resolve()
    print(path)
    return 0


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
