"""The ``git`` connector: a repository's documentation folders, or a wiki (``<repo>.wiki.git``), through ``git`` itself.

Settings (``[sources.NAME]``)::

    type = "git"
    url = "https://github.com/acme/docs.git"   # anything `git clone` takes: a path, file://, https://, ssh
    branch = "main"                            # default: the repository's default branch
    paths = ["docs", "faq"]                    # folders (or files) within it; default: all of it
    web_url = "https://github.com/acme/docs/blob/{commit}/{path}"   # links; also {branch}, {stem}
    token_env = "DOCS_GIT_TOKEN"               # for https: sent as a header, never put in the URL or logs

The repository is kept as a bare clone under the cache folder and fetched on every sync. The cursor is the commit
last synced: a sync reads only the files that ``git diff`` says changed since it (added or modified: read again;
deleted or renamed away: ``Gone``), and lists every file of the commit (``ls-tree``, cheap) so that whatever else
left is removed too. A cursor the repository no longer has (history rewritten) means a full read.

Each file (``.md .markdown .txt .html .htm .pdf``) is one document, id ``NAME:path``, parsed as a folder's file
would be; its version is the last commit that touched it and its updated time that commit's date. With
``web_url``, its link is the template filled in, and each Markdown heading links to its anchor as GitHub and
GitLab make it. A document's visibility is what its front matter says (else the source's rule for ``everyone``).
Every git command runs in a worker thread, with prompts off (a missing credential fails instead of waiting).
"""

from __future__ import annotations

import asyncio
import base64
import os
import re
import subprocess
import unicodedata
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from retrieval.connectors import Event, Gone, Item, Listed, Skipped, SourceFailed, document_id, secret
from retrieval.documents import Block, BlockKind, Document
from retrieval.loaders import checked, parse_bytes
from retrieval.sources import SourceSpec

DOC_EXTENSIONS = (".md", ".markdown", ".txt", ".html", ".htm", ".pdf")
_TIMEOUT_S = 600.0
_MAX_DOCUMENT_CHARS = 5_000_000


@dataclass(frozen=True)
class GitConnector:
    name: str
    url: str
    cache: Path
    branch: str | None = None
    paths: tuple[str, ...] = ()
    web_url: str | None = None
    token: str | None = None  # never printed: repr off below

    def __repr__(self) -> str:
        return f"GitConnector({self.name!r}, {_scrub(self.url)!r})"

    @classmethod
    def from_spec(cls, spec: SourceSpec, cache_root: Path, environ: Mapping[str, str]) -> GitConnector:
        spec.only("url", "branch", "paths", "web_url")
        token = secret(spec, environ, "token") if spec.token_env else None  # a public repository needs none
        paths = tuple(p.strip("/") for p in spec.texts("paths"))
        return cls(spec.name, spec.text("url"), cache_root / f"{spec.name}.git", spec.optional_text("branch"),
                   tuple(p for p in paths if p), spec.optional_text("web_url"), token)

    async def check(self) -> str:
        head = await asyncio.to_thread(self._fetch)
        files = await asyncio.to_thread(self._files, head)
        return f"{_scrub(self.url)}: commit {head[:12]}, {len(files)} documents"

    async def pull(self, cursor: str | None) -> AsyncIterator[Event]:
        for event in await asyncio.to_thread(self._pull, cursor):
            yield event

    # -- in a worker thread ----------------------------------------------------------------------

    def _pull(self, cursor: str | None) -> list[Event]:
        head = self._fetch()
        files = self._files(head)
        events: list[Event] = []
        if cursor is not None and cursor != head and self._has_commit(cursor):
            changed, deleted = self._diff(cursor, head)
            events.extend(Gone(document_id(self.name, path)) for path in deleted)
            wanted = [path for path in changed if path in files]
        elif cursor == head:
            wanted = []
        else:
            wanted = sorted(files)
        last = self._last_commits(head, wanted, since=cursor if cursor and self._has_commit(cursor) else None)
        for path, data in zip(wanted, self._blobs(head, wanted)):
            events.extend(self._documents(path, data, last.get(path)))
        events.append(Listed(head, frozenset(document_id(self.name, path) for path in files)))
        return events

    def _documents(self, path: str, data: bytes, commit: tuple[str, str] | None) -> Iterator[Event]:
        doc_id = document_id(self.name, path)
        where = f"{self.name}:{path}"
        for parsed in parse_bytes(data, name=path, source=where, document_id=doc_id):
            if not isinstance(parsed, Document):
                yield Skipped(where, parsed.message, doc_id)
                continue
            parsed = checked(parsed, _MAX_DOCUMENT_CHARS)
            if not isinstance(parsed, Document):
                yield Skipped(where, parsed.message, doc_id)
                continue
            sha, date = commit if commit is not None else (None, None)
            url = parsed.url or self._link(path, sha)
            blocks = with_anchors(parsed.blocks) if url and path.lower().endswith((".md", ".markdown")) else parsed.blocks
            document = replace(parsed, document_id=doc_id, url=url, blocks=blocks,
                               version=parsed.version or (sha[:12] if sha else None),
                               updated_at=parsed.updated_at or date, source_path=None)
            # Front matter that names channels decides itself; otherwise the source's rule for everyone.
            yield Item(document, None) if document.visibility is not None else Item(document)

    def _link(self, path: str, sha: str | None) -> str | None:
        if self.web_url is None:
            return None
        return self.web_url.format(commit=sha or self.branch or "HEAD", branch=self.branch or "HEAD", path=path,
                                   stem=PurePosixPath(path).stem)

    def _fetch(self) -> str:
        """Clone (the first time) or fetch; the commit to sync."""
        if not (self.cache / "HEAD").exists():
            self.cache.parent.mkdir(parents=True, exist_ok=True)
            self._git("clone", "--bare", "--quiet", self.url, str(self.cache), cwd=self.cache.parent)
        else:
            self._git("fetch", "--quiet", "--prune", "--force", self.url, "+refs/heads/*:refs/heads/*")
            # The remote's default branch may have changed; ls-remote --symref says which it is now.
            symref = self._git("ls-remote", "--symref", self.url, "HEAD").splitlines()
            if symref and symref[0].startswith("ref: "):
                self._git("symbolic-ref", "HEAD", symref[0].split()[1])
        ref = f"refs/heads/{self.branch}" if self.branch else "HEAD"
        try:
            return self._git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()
        except SourceFailed:
            raise SourceFailed(f"the repository has no branch '{self.branch or 'HEAD'}': check `branch`") from None

    def _files(self, head: str) -> set[str]:
        listing = self._git("ls-tree", "-r", "-z", "--name-only", head, "--", *self.paths)
        return {p for p in listing.split("\0") if p and _is_document(p)}

    def _has_commit(self, sha: str) -> bool:
        result = self._run("cat-file", "-e", f"{sha}^{{commit}}")
        return result.returncode == 0

    def _diff(self, old: str, new: str) -> tuple[list[str], list[str]]:
        """Files added or modified, and files deleted, between two commits (a rename is both)."""
        out = self._git("diff", "--name-status", "--no-renames", "-z", old, new, "--", *self.paths).split("\0")
        changed, deleted = [], []
        for status, path in zip(out[0::2], out[1::2]):
            if not _is_document(path):
                continue
            (deleted if status.startswith("D") else changed).append(path)
        return changed, deleted

    def _last_commits(self, head: str, paths: Sequence[str], since: str | None) -> dict[str, tuple[str, str]]:
        """Each path's last commit (sha, ISO date), from one walk of the history, newest first."""
        if not paths:
            return {}
        revisions = f"{since}..{head}" if since else head
        out = self._git("log", "--format=%x01%H %cI", "--name-only", "-z", "--no-renames", revisions, "--",
                        *self.paths)
        wanted, found = set(paths), {}
        for entry in out.split("\x01")[1:]:  # "SHA DATE\0\nname\0name\0"
            header, *names = entry.split("\0")
            sha, _, date = header.strip().partition(" ")
            for name in (n.strip("\n") for n in names):
                if name in wanted and name not in found:
                    found[name] = (sha, date)
        return found

    def _blobs(self, head: str, paths: Sequence[str]) -> list[bytes]:
        """The contents of ``paths`` at ``head``, through one ``git cat-file --batch``."""
        if not paths:
            return []
        request = "".join(f"{head}:{path}\n" for path in paths).encode("utf-8")
        result = self._run("cat-file", "--batch", input=request)
        if result.returncode != 0:
            raise SourceFailed(f"git cat-file failed: {_first_line(result.stderr)}")
        out, blobs, at = result.stdout, [], 0
        for _ in paths:
            end = out.index(b"\n", at)
            size = int(out[at:end].split()[2])
            blobs.append(out[end + 1 : end + 1 + size])
            at = end + 1 + size + 1
        return blobs

    def _git(self, *args: str, cwd: Path | None = None) -> str:
        result = self._run(*args, cwd=cwd)
        if result.returncode != 0:
            raise SourceFailed(f"git {args[0]} failed: {_first_line(result.stderr)}")
        return result.stdout.decode("utf-8", "replace")

    def _run(self, *args: str, cwd: Path | None = None, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "LC_ALL": "C"}
        if self.token is not None:  # a header from the environment: not in argv (ps) nor in the remote's URL
            basic = base64.b64encode(f"x-access-token:{self.token}".encode()).decode()
            env.update({"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.extraHeader",
                        "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}"})
        git_dir = [] if args[0] == "clone" else ["--git-dir", str(self.cache)]
        try:
            return subprocess.run(["git", "-c", "core.quotePath=false", *git_dir, *args], cwd=cwd, env=env,
                                  input=input, capture_output=True, timeout=_TIMEOUT_S, check=False)
        except FileNotFoundError:
            raise SourceFailed("git is not installed: install git (the git connector runs it)") from None
        except subprocess.TimeoutExpired:
            raise SourceFailed(f"git {args[0]} took over {_TIMEOUT_S:.0f} s: check the network and the URL") from None


def _is_document(path: str) -> bool:
    name = PurePosixPath(path).name
    return name.lower().endswith(DOC_EXTENSIONS) and not any(part.startswith(".") for part in PurePosixPath(path).parts)


def _first_line(stderr: bytes) -> str:
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    return _scrub(lines[0] if lines else "no message")[:300]


def _scrub(text: str) -> str:
    """A URL's user and password (``https://user:token@host``) never reach a message."""
    return re.sub(r"://[^/@\s]+@", "://***@", text)


def github_anchor(heading: str, seen: dict[str, int]) -> str:
    """The fragment GitHub (and GitLab) give a Markdown heading: lower case, punctuation out, spaces to hyphens,
    letters of every script kept; the second "Refunds" is ``refunds-1``. ``seen`` counts them per document."""
    text = unicodedata.normalize("NFC", heading).strip().lower()
    slug = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LNM").replace(" ", "-")
    count = seen.get(slug, 0)
    seen[slug] = count + 1
    return slug if count == 0 else f"{slug}-{count}"


def with_anchors(blocks: Sequence[Block]) -> tuple[Block, ...]:
    seen: dict[str, int] = {}
    return tuple(replace(b, anchor=github_anchor(b.text, seen)) if b.kind is BlockKind.HEADING else b for b in blocks)
