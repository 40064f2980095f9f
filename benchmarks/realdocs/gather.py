"""Building the suite: install missing Debian packages (as root), copy each package's files into the cache.

The copy, not /usr/share/doc itself, is what gets indexed: the include globs pick a coherent part of a package,
gzipped files are unpacked (smoldocs reads no .gz), and a suffix smoldocs would misread is renamed. The docs
themselves are never committed; packages.json says how to get them back.
"""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from benchmarks.realdocs.suite import Package, suite_dir


@dataclass(frozen=True)
class Copied:
    package: str
    folder: Path
    files: int
    bytes: int


def installed(apt_name: str) -> bool:
    """Whether dpkg says the package is installed."""
    try:
        out = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", apt_name], capture_output=True, text=True, check=False
        )
    except FileNotFoundError:  # not a Debian system
        return False
    return out.returncode == 0 and out.stdout.strip().endswith("installed") and "not-installed" not in out.stdout


def install_line(names: Sequence[str]) -> str:
    return "apt-get install -y " + " ".join(names)


def ensure_installed(packages: Sequence[Package], say: Callable[[str], None] = print) -> list[str]:
    """Install the missing apt packages when running as root; otherwise say the one line to run. Returns the missing."""
    missing = sorted({name for p in packages for name in p.apt_names if not installed(name)})
    if not missing:
        return []
    if os.geteuid() != 0:
        say(f"missing Debian packages; run as root: {install_line(missing)}")
        return missing
    say(f"installing: {install_line(missing)}")
    try:
        subprocess.run(["apt-get", "install", "-y", *missing], check=False)
    except FileNotFoundError:
        say("no apt-get here: the suite's packages come from Debian; copy their files by hand or build on Debian")
        return missing
    return [m for m in missing if not installed(m)]


def source_files(package: Package) -> list[tuple[Path, str]]:
    """(file, doc id in the copy) of every file the include globs match, sorted, each once."""
    found: dict[str, Path] = {}
    for pattern in package.include:
        for path in package.source.glob(pattern):
            if path.is_file() and not any(path.relative_to(package.source).match(x) for x in package.exclude):
                found.setdefault(target_name(package, path.relative_to(package.source).as_posix()), path)
    return sorted(((path, name) for name, path in found.items()), key=lambda pair: pair[1])


def target_name(package: Package, relative: str) -> str:
    """The doc id a shipped file gets in the copy: `.gz` dropped, then the package's suffix renames."""
    name = relative[:-3] if relative.endswith(".gz") else relative
    for old, new in package.rename:
        if name.endswith(old):
            return name[: -len(old)] + new
    return name


def copy_package(package: Package, root: Path | None = None) -> Copied:
    """Copy (unpacking .gz) the package's files into its folder, replacing what was there."""
    folder = package.folder(root)
    files = source_files(package)
    if not files:
        raise FileNotFoundError(f"{package.name}: nothing matches {', '.join(package.include)} under {package.source}")
    if folder.exists():
        shutil.rmtree(folder)
    total = 0
    for path, name in files:
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
        target.write_bytes(data)
        total += len(data)
    return Copied(package.name, folder, len(files), total)


def build_suite(packages: Sequence[Package], root: Path | None = None, say: Callable[[str], None] = print) -> int:
    """Install what is missing and copy every package; 0 when all were copied, else 1."""
    missing = set(ensure_installed(packages, say))
    status = 0
    for package in packages:
        if package.in_repo:
            say(f"{package.name}: searched in place at {package.source}")
            continue
        if missing.intersection(package.apt_names):
            say(f"{package.name}: not installed, skipped")
            status = 1
            continue
        try:
            copied = copy_package(package, root)
        except (FileNotFoundError, OSError) as exc:
            say(f"{package.name}: {exc}")
            status = 1
            continue
        say(f"{package.name}: {copied.files} files, {copied.bytes / 1e6:.1f} MB -> {copied.folder}")
    say(f"suite folder: {root or suite_dir()}")
    return status
