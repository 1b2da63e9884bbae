"""The ``verbatim`` command: one group, ``--json`` for machines, a rich terminal for people.

Domain errors become one line on stderr and a non-zero exit here, and only here:
exit 0 = done; 1 = something failed (a file not ingested, Weaviate unreachable …); 2 = bad usage.

Each command lives in the module ``COMMANDS`` names and is imported when it runs (``--help`` imports them all):
`verbatim ingest` imports neither the answer path nor Slack, SQLAlchemy or the review desk, half a second of
its start-up, and its first batch is embedded that much sooner (docs/benchmarks.md, "the check from outside").
"""

from __future__ import annotations

import importlib

import click

from bot.log_format import CLI_FORMAT, configure_logging

COMMANDS = {
    "ingest": "bot.cli_ingest:ingest_command",
    "search": "bot.cli_search:search_command",
    "ask": "bot.cli_ask:ask_command",
    "eval": "bot.cli_ask:eval_command",
    "serve": "bot.serve:serve_command",
    "sync": "bot.cli_sources:sync_command",
    "sources": "bot.cli_sources:sources",
    "documents": "bot.cli_sources:documents",
    "review": "bot.review.cli:review",
    "db": "bot.db_cli:db",
    "weaviate": "bot.cli_weaviate:weaviate",
}


class _Commands(click.Group):
    """The subcommands of ``COMMANDS``, each imported when it is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, attribute = target.split(":")
        command: click.Command = getattr(importlib.import_module(module), attribute)
        return command


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="verbatim", message="verbatim %(version)s")
@click.option("-v", "--verbose", is_flag=True, help="Log what happens to stderr.")
def main(verbose: bool) -> None:
    """Verbatim: answers from your documents, every claim with a verified verbatim quote."""
    # Named, so that `serve` replaces this handler with its own (LOG_FORMAT) instead of adding a second one.
    configure_logging("INFO" if verbose else "WARNING", text_format=CLI_FORMAT)
