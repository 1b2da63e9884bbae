"""What every command shares: one-line errors with meaningful exit codes, settings, async bodies, JSONL input.

Exit codes: 0 done; 1 something failed; 2 bad usage or an invalid setting; 130 stopped by SIGINT (Ctrl-C);
143 stopped by SIGTERM. Domain errors become CLI errors here, and only in the command layer.

Stopping: an async command (``async_command``) takes SIGINT and SIGTERM itself, as ``serve`` does, whatever it
inherited (a shell starts a background job with SIGINT ignored, and Python then never raises KeyboardInterrupt;
SIGTERM's default kills at once, leaving the home's Weaviate Embedded running). The first signal cancels the
command: what it started is stopped on the way out (the embedder gives up at its next model run, the home's
server is stopped when this was its last user), the command says what was done and what was not, and the exit
code names the signal. A second signal only says that the stop is under way.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import signal
import sys
from collections.abc import Callable, Coroutine, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from bot.settings import Settings
from retrieval.embedders.local import usable_cores
from retrieval.ingest import Outcome, Status

T = TypeVar("T")

log = logging.getLogger(__name__)

PLAIN_WIDTH = 160  # a pipe or a file has no width: wide enough that ids and tables are not folded


def fail(message: str, code: int = 1) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def load_settings() -> Settings:
    """Settings from the environment; an invalid one is named in one line (exit 2)."""
    try:
        return Settings()
    except ValidationError as error:
        first = error.errors()[0]
        name = str(first["loc"][0]).upper() if first["loc"] else "a setting"
        fail(f"{name} is invalid ({first['msg']}): fix it in the environment or .env", code=2)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stopped(Exception):
    """The command was stopped by a signal (``signum``); it has said what it had done."""

    def __init__(self, signum: signal.Signals, meanwhile: Exception | None = None) -> None:
        said = f" (meanwhile: {type(meanwhile).__name__}: {str(meanwhile).splitlines()[0] if str(meanwhile) else ''})"
        super().__init__(f"stopped by {signum.name}{said if meanwhile is not None else ''}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + int(self.signum)  # the shell's convention: 130 for SIGINT, 143 for SIGTERM


class StopSignals:
    """SIGINT and SIGTERM handled on the running loop: the first calls ``on_stop(signum)``, a later one says
    that the stop is under way. ``received`` is the first signal (None while none came)."""

    def __init__(self, on_stop: Callable[[signal.Signals], None]) -> None:
        self._on_stop = on_stop
        self.received: signal.Signals | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def __enter__(self) -> StopSignals:
        self._loop = asyncio.get_running_loop()
        for signum in STOP_SIGNALS:
            self._loop.add_signal_handler(signum, self._arrived, signum)
        return self

    def __exit__(self, *_: object) -> None:
        assert self._loop is not None
        for signum in STOP_SIGNALS:
            self._loop.remove_signal_handler(signum)

    def _arrived(self, signum: signal.Signals) -> None:
        if self.received is not None:
            log.warning("%s: already stopping (stopping what this command started)", signum.name)
            return
        self.received = signum
        self._on_stop(signum)


async def until_stopped(body: Coroutine[Any, Any, T]) -> T:
    """Run ``body`` until it ends, or until SIGINT/SIGTERM cancels it (then ``Stopped``, once it has cleaned up)."""
    task = asyncio.current_task()
    assert task is not None
    with StopSignals(lambda _signum: task.cancel()) as signals:
        try:
            result = await body
        except asyncio.CancelledError:
            if signals.received is None:
                raise
            raise Stopped(signals.received) from None
        except Exception as error:  # a library may turn the cancellation into its own error
            if signals.received is None:
                raise
            raise Stopped(signals.received, error) from error
    if signals.received is not None:  # it ended anyway (a library took the cancellation for an error)
        raise Stopped(signals.received)
    return result


def async_command(errors: Mapping[type[BaseException], int]) -> Callable[[Callable[..., Coroutine[Any, Any, T]]], Callable[..., T]]:
    """Run an async command body until it ends or a signal stops it (``until_stopped``); each listed error type
    becomes its message on one line and that exit code."""
    expected = tuple(errors)

    def decorate(coro_fn: Callable[..., Coroutine[Any, Any, T]]) -> Callable[..., T]:
        @functools.wraps(coro_fn)
        def wrapper(*args: Any, **kwargs: Any) -> T:
            try:
                return asyncio.run(until_stopped(coro_fn(*args, **kwargs)))
            except Stopped as stopped:
                fail(str(stopped), code=stopped.exit_code)
            except expected as error:
                code = next(c for kind, c in errors.items() if isinstance(error, kind))
                fail(str(error), code=code)
            except KeyboardInterrupt:  # Ctrl-C before the command's loop took the signals
                fail("stopped by SIGINT", code=130)

        return wrapper

    return decorate


def stop_requested() -> bool:
    """Whether the current task was asked to stop (a signal cancelled it), even if a library took the
    cancellation for an error: a loop over many items checks it between items."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def read_jsonl(path: Path, what: str, problem: Callable[[object], str | None]) -> tuple[list[tuple[int, dict[str, Any]]], int]:
    """The valid objects of a JSONL file with their line numbers, and how many lines were bad.

    Each bad line is reported on stderr as ``error: FILE:LINE: what is wrong; line skipped``; the rest goes on.
    ``problem`` says what is wrong with a parsed line (None when it is fine).
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        fail(f"{path}: cannot read the {what} file ({type(error).__name__}): it must be UTF-8 JSONL")
    good: list[tuple[int, dict[str, Any]]] = []
    bad = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item: object = json.loads(line)
        except json.JSONDecodeError:
            item = None
        reason = problem(item) if isinstance(item, dict) else "expected a JSON object"
        if reason:
            click.echo(f"error: {path}:{number}: {reason}; line skipped", err=True)
            bad += 1
            continue
        assert isinstance(item, dict)
        good.append((number, item))
    return good, bad


def workers_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--workers N``: the cores a local embedder computes on."""
    return click.option("--workers", type=click.IntRange(1, 1024), default=None,
                        help="Cores the local embedder computes on (default: every core this process may use).")(command)


def embed_cores(workers: int | None) -> tuple[int, str | None]:
    """The cores to embed on for ``--workers``, and a notice when more were asked than this process may use."""
    usable = usable_cores()
    if workers is None:
        return usable, None
    if workers > usable:
        return usable, f"--workers {workers}: this process may use {usable} cores, so {usable} it is"
    return workers, None


def say_cores(settings: Settings, cores: int, notice: str | None, *, as_json: bool) -> None:
    """One line on stderr saying what the ingest computes on (not with ``--json``)."""
    if as_json:
        return
    if notice:
        click.echo(notice, err=True)
    if settings.embedder_name != "cohere":  # a remote embedder computes elsewhere
        click.echo(f"embedding with {settings.embedder_name} on {cores} core{'s' if cores > 1 else ''}", err=True)


@contextmanager
def outcome_printer(what: str, *, as_json: bool, total: int | None = None) -> Iterator[Callable[[Outcome], None]]:
    """An ``on_outcome`` for ingest and sync: a progress bar on a terminal (with ``total``, how far and how long
    to go), and each failure as one line on stderr (not with ``--json``, whose object carries them)."""
    err = Console(stderr=True)
    progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                        TextColumn("{task.completed}/{task.total} documents" if total else "{task.completed} documents"),
                        TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                        console=err, disable=as_json or not err.is_terminal, transient=True)
    with progress:
        task = progress.add_task(what, total=total)

        def on_outcome(outcome: Outcome) -> None:
            progress.update(task, advance=1, description=escape(outcome.source[-50:]))
            if outcome.status is Status.FAILED and not as_json:
                print_failure(err, outcome.source, outcome.message)

        yield on_outcome


def print_failure(err: Console, source: str, message: str | None) -> None:
    err.print(f"[red]failed[/red] {escape(source)}: {escape(message or '')}", highlight=False, soft_wrap=True)
