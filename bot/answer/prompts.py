"""Prompts are versioned files in ``bot/answer/prompts/`` (``<name>.v<N>.txt``); the newest version of each
is loaded once at start-up, and its version is logged with every exchange that used it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

PROMPTS_DIR = Path(__file__).with_name("prompts")
_NAME = re.compile(r"^(?P<name>[a-z_]+)\.v(?P<version>\d+)\.txt$")


@dataclass(frozen=True, slots=True)
class Prompt:
    name: str
    version: int
    text: str

    @property
    def id(self) -> str:
        return f"{self.name}.v{self.version}"


def load_prompts(folder: Path = PROMPTS_DIR) -> dict[str, Prompt]:
    """The newest version of every prompt in ``folder``."""
    newest: dict[str, Prompt] = {}
    for path in sorted(folder.glob("*.txt")):
        match = _NAME.match(path.name)
        if match is None:
            continue
        prompt = Prompt(match["name"], int(match["version"]), path.read_text(encoding="utf-8").strip())
        if prompt.name not in newest or prompt.version > newest[prompt.name].version:
            newest[prompt.name] = prompt
    return newest
