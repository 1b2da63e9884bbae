"""A real git repository for the tests: files written, committed, deleted and renamed with the git CLI."""

from __future__ import annotations

import subprocess
from pathlib import Path


class Repo:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "--quiet", "--initial-branch", "main")

    def git(self, *args: str) -> str:
        return subprocess.run(["git", "-c", "user.name=Docs", "-c", "user.email=docs@example.com", *args],
                              cwd=self.path, check=True, capture_output=True, text=True).stdout

    def write(self, name: str, text: str) -> None:
        file = self.path / name
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text, encoding="utf-8")

    def commit(self, message: str) -> str:
        self.git("add", "--all")
        self.git("commit", "--quiet", "--message", message)
        return self.git("rev-parse", "HEAD").strip()
