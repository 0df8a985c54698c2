"""gtop's commands in Textual's command palette (ctrl+p)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.screen import Screen


@dataclass(frozen=True)
class Command:
    """A palette entry: ``name`` is matched against what the user types."""

    name: str
    help: str
    run: Callable[[], object]


class HasCommands(Protocol):
    def palette_commands(self, screen: Screen) -> list[Command]: ...


class GtopCommands(Provider):
    """Asks the app for its commands each time the palette opens (they depend on state:
    the screen under the palette, live or replay, recording or not, which processes
    exist)."""

    def _commands(self) -> list[Command]:
        app: HasCommands = self.app  # type: ignore[assignment]
        return app.palette_commands(self.screen)

    async def discover(self) -> Hits:
        for cmd in self._commands():
            yield DiscoveryHit(cmd.name, cmd.run, help=cmd.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for cmd in self._commands():
            score = matcher.match(cmd.name)
            if score > 0:
                yield Hit(score, matcher.highlight(cmd.name), cmd.run, help=cmd.help)
