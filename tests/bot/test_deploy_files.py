"""The deployment files agree with the code: compose.yaml and the Containerfile (README, "Deploy with containers").

The image itself is built and run by ``scripts/image-test.sh`` (``make image-test``); these checks need no podman
and catch drift at once: a setting renamed in the code, the Weaviate pin moved without the compose file, the
health check or the volume pointed somewhere else.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from bot.settings import Settings
from retrieval.embedded_home import _EMBEDDED_ENV
from retrieval.weaviate_install import WEAVIATE_VERSION

ROOT = Path(__file__).resolve().parents[2]


def compose() -> dict:
    return yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))


def containerfile() -> str:
    return (ROOT / "Containerfile").read_text(encoding="utf-8")


def test_compose_runs_the_migrations_once_before_the_bot() -> None:
    services = compose()["services"]
    assert set(services) == {"bot", "migrate", "weaviate", "postgres"}
    assert services["migrate"]["command"] == ["alembic", "upgrade", "head"]
    assert services["migrate"]["restart"] == "no"
    assert services["bot"]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}
    assert services["bot"]["depends_on"]["weaviate"] == {"condition": "service_healthy"}
    assert services["migrate"]["depends_on"]["postgres"] == {"condition": "service_healthy"}
    assert services["bot"]["env_file"] == services["migrate"]["env_file"] == ".env"


def test_compose_sets_only_settings_the_code_reads() -> None:
    services = compose()["services"]
    fields = {name.upper() for name in Settings.model_fields}
    for name in ("bot", "migrate"):
        assert set(services[name]["environment"]) <= fields, name
    environment = services["bot"]["environment"]
    assert environment["WEAVIATE_URL"] == "http://weaviate:8080"
    assert environment["WEAVIATE_GRPC_URL"] == "http://weaviate:50051"
    assert environment["DATABASE_URL"].startswith("postgresql+asyncpg://")
    assert services["bot"]["ports"] == ["${PORT:-3000}:3000"] and environment["PORT"] == "3000"


def test_compose_weaviate_is_the_pinned_version_with_the_embedded_servers_settings() -> None:
    weaviate = compose()["services"]["weaviate"]
    assert weaviate["image"] == f"semitechnologies/weaviate:{WEAVIATE_VERSION}"
    environment = weaviate["environment"]
    assert environment["AUTHENTICATION_APIKEY_ALLOWED_KEYS"].startswith("${WEAVIATE_API_KEY:?")
    for key in ("AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED", "AUTHENTICATION_APIKEY_ENABLED",
                "AUTHENTICATION_APIKEY_USERS", "ENABLE_TOKENIZER_KAGOME_JA", "ENABLE_MODULES"):
        assert environment[key] == _EMBEDDED_ENV[key], key


def test_containerfile_defaults_and_runtime() -> None:
    text = containerfile()
    assert re.search(r"^ARG BASE_IMAGE=python:3\.\d+-slim-bookworm$", text, re.M)
    assert re.search(r"^ARG GO_IMAGE=golang:1\.\d+-bookworm$", text, re.M)
    assert "--require-hashes --no-deps -r /src/requirements.lock" in text
    final = text.rsplit("\nFROM ", 1)[1]  # the stage that runs
    assert "\nRUN " not in final  # nothing mounted at build time can leave a trace in it
    assert re.search(r"^USER verbatim$", final, re.M)
    assert re.search(r"^VOLUME \[\"/data\"\]$", final, re.M) and "VERBATIM_HOME=/data" in final
    assert re.search(rf"^EXPOSE {Settings.model_fields['port'].default}$", final, re.M)
    assert "/readyz" in final.split("HEALTHCHECK", 1)[1]
    assert "WEAVIATE_VERSION" in text and WEAVIATE_VERSION not in text  # the pin lives in weaviate_install.py


def test_env_example_does_not_override_the_images_paths() -> None:
    example = (ROOT / ".env.example").read_text(encoding="utf-8")
    assert not re.search(r"^(VERBATIM_HOME|WEAVIATE_BINARY_DIR)=", example, re.M)


def test_docker_and_podman_ignore_the_same_files() -> None:
    assert (ROOT / ".dockerignore").read_bytes() == (ROOT / ".containerignore").read_bytes()
