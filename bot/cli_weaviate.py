"""``verbatim weaviate install``: the pinned Weaviate server that Weaviate Embedded runs, built with Go."""

from __future__ import annotations

import click
from rich.console import Console

from bot.cli_support import fail, load_settings
from retrieval.weaviate_install import ServerInstallError, install_server


@click.group()
def weaviate() -> None:
    """The Weaviate server that Weaviate Embedded runs."""


@weaviate.command("install")
def weaviate_install() -> None:
    """Build the pinned Weaviate server with Go, unless it is already installed (takes minutes once)."""
    settings = load_settings()
    config = settings.weaviate_config()
    err = Console(stderr=True)
    try:
        with err.status(f"building Weaviate {config.version} from its Go module (a few minutes, once)…"):
            path, built = install_server(config.binary_dir, config.version)
    except ServerInstallError as error:
        fail(str(error))
    click.echo(f"{'built' if built else 'already installed'}: Weaviate {config.version} at {path}")
