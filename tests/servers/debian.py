"""Debian's packages for the test servers: find a program, or install its package with apt-get (as root, as in
CI), printing apt's progress. Without root, or without apt-get, the error says what to run instead: there is no
fake server to fall back on."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.servers.process import Log

APT_TIMEOUT_S = 15 * 60


def _apt(args: list[str], *, log: Log) -> int:
    command = ["apt-get", *args]
    log(f"  $ {' '.join(command)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               stdin=subprocess.DEVNULL, bufsize=1)
    assert process.stdout is not None
    with process.stdout:
        for line in process.stdout:
            log(f"    {line.rstrip()}")
    return process.wait(timeout=APT_TIMEOUT_S)


def ensure_package(package: str, find: Callable[[], Path | None], *, what: str, manual: str,
                   error: type[Exception], log: Log) -> Path:
    """What ``find`` finds, after installing Debian's ``package`` when it finds nothing (as root):

        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends <package>

    running ``apt-get update`` first only when the package lists do not know the package yet. ``error`` (with
    ``manual``, how to install it by hand) when that cannot be done."""
    found = find()
    if found is not None:
        log(f"{package}: using {found}")
        return found
    manual = f"apt-get install {package} (Debian/Ubuntu), or {manual}"
    if shutil.which("apt-get") is None:
        raise error(f"{what} not found and there is no apt-get here; install it: {manual}")
    if os.geteuid() != 0:
        raise error(f"{what} not found; installing it needs root: sudo {manual}")
    log(f"{what} not found: installing Debian's {package} package")
    install = ["install", "-y", "--no-install-recommends", package]
    # A fresh image often has no package lists yet; update only when the first try cannot find the package.
    if _apt(install, log=log) != 0:
        log("  the install failed; updating the package lists and trying again")
        if _apt(["update"], log=log) != 0 or _apt(install, log=log) != 0:
            raise error(f"apt-get could not install {package} (its output is above)")
    found = find()
    if found is None:
        raise error(f"apt-get installed {package} but {what} was not found")
    log(f"{package}: installed {found}")
    return found
