"""`s3bulk --version`: the version, from its one place (`__version__`, which the build reads too:
pyproject's [tool.hatch.version]), and the commit when s3bulk runs from a git checkout that is not
the release's own tag, so a bug report says which code ran. An installed wheel has no git beside
it and shows the version alone."""

from __future__ import annotations

import subprocess
from pathlib import Path

# the checkout s3bulk runs from, if it does: the folder above the package
CHECKOUT = Path(__file__).resolve().parents[2]


def version_text(checkout: Path = CHECKOUT) -> str:
    """"0.1.0", or "0.1.0+g1a2b3c4" (PEP 440's local version) from a checkout off the release's tag."""
    from .. import __version__

    commit = _commit_off_release(checkout, __version__)
    return __version__ if commit is None else f"{__version__}+g{commit}"


def _commit_off_release(checkout: Path, version: str) -> str | None:
    """HEAD's short hash when `checkout` is this project's git checkout and HEAD is not tagged
    v<version>; None otherwise (no checkout, no git, the release itself)."""
    if not ((checkout / ".git").exists() and (checkout / "pyproject.toml").is_file()):
        return None

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "-C", str(checkout), *args], capture_output=True, text=True, timeout=10)

    try:
        if git("describe", "--tags", "--exact-match", "--match", f"v{version}", "HEAD").returncode == 0:
            return None
        head = git("rev-parse", "--short", "HEAD")
    except (OSError, subprocess.SubprocessError):
        return None
    return (head.stdout.strip() or None) if head.returncode == 0 else None
