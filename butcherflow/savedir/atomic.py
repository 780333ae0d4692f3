"""Atomic writes: a file is either its old content or its new content, never half of either.

Every file of a save dir (and every report the experiments write) goes to a temporary name in the
same folder, is flushed to disk, and is moved into place with one `os.replace`. A killed process
leaves at most a `.NAME.tmp` behind, which `remove_stale_temporaries` deletes on the next start.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; on success it replaces `path` in one `os.replace`."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        yield tmp
        with open(tmp, "rb+") as handle:  # on disk before the rename makes it visible
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text(path: Path, text: str) -> None:
    """Write `text` to `path` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Write `data` as indented JSON to `path` atomically."""
    write_text(path, json.dumps(data, indent=2, sort_keys=False) + "\n")


def remove_stale_temporaries(save_dir: Path) -> None:
    """Delete the temporary files a killed run left behind (never a committed file)."""
    for tmp in save_dir.glob(".*.tmp"):
        tmp.unlink(missing_ok=True)


def link_or_copy(source: Path, target: Path) -> None:
    """Make `target` a hard link to `source` (a copy where the filesystem has no hard links)."""
    with atomic_path(target) as tmp:
        try:
            os.link(source, tmp)
        except OSError:  # no hard links here (some network filesystems): copy the bytes
            shutil.copyfile(source, tmp)


def digest(path: Path) -> str:
    """The sha256 of a file's bytes, in hex."""
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            sha.update(chunk)
    return sha.hexdigest()
