"""A state's tree copied as `cp -a` keeps it, each file by a function of the caller's (a copy, zstd packing or
unpacking): the one walk clone.py and pack.py share."""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable


def copy_tree(src: Path, dst: Path, file_to: Callable[[Path, Path], Path]) -> None:
    """src's tree into dst (made where missing): links and directories made here, each file by file_to(src file,
    dst directory), which returns the file it wrote. Owners kept as root (a server's files are its user's:
    PostgreSQL will not run as root) and times kept, a directory's after its files (a write into it moves its time)."""
    dst.mkdir(parents=True, exist_ok=True)
    made: dict[Path, Path] = {}
    for p in sorted(src.rglob("*")):
        to = dst / p.relative_to(src)
        if p.is_symlink():
            to.symlink_to(os.readlink(p))
        elif p.is_dir():
            to.mkdir()
        else:
            to = file_to(p, to.parent)
            shutil.copystat(p, to)
        made[p] = to
    for p in sorted(made, reverse=True):
        st = p.lstat()
        if os.geteuid() == 0:
            os.chown(made[p], st.st_uid, st.st_gid, follow_symlinks=False)
        if p.is_dir() and not p.is_symlink():
            shutil.copystat(p, made[p])
