#!/usr/bin/env bash
# The container image, built and run here as the README's "Deploy with containers" says: build the image, start it
# with a data volume (Weaviate Embedded inside the container, SQLite), wait for /readyz, ingest the demo corpus,
# ask one question through POST /api/ask, check the answer, and remove what it started (also on failure).
#
# No image registry is reachable from these machines, so the base image is made locally with Debian's mmdebstrap
# and passed as the build argument (BASE_IMAGE, and GO_IMAGE with this machine's Go toolchain mounted in); the
# Containerfile's defaults (the official python and golang images) are for everyone else. Kept between runs on one
# machine: the base image (made once; VERBATIM_IMAGE_REBUILD_BASE=1 makes it again), podman's layer cache, and
# the host's Go module and build caches, mounted into the Weaviate build.
#
# Build-time settings come from this machine and are mounted for the build only, never copied into the image:
# the CA bundle, a pip.conf (cert, index URLs) and a Go env file (GOPROXY, GOSUMDB, GOFLAGS, …).
# Podman here needs runc, a containers.conf without default ulimits and pids limit (CONTAINERS_CONF points at one
# this script writes; the machine's files are not touched) and host networking for builds.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${VERBATIM_IMAGE:-localhost/verbatim:test}
BASE=${VERBATIM_BASE_IMAGE:-localhost/verbatim-base:bookworm}
NAME=verbatim-it-$$
QUESTION="How long do I have to request a refund for an annual plan?"
started=$(date +%s)
step() { printf '[image-test %4ss] %s\n' "$(( $(date +%s) - started ))" "$*"; }

work=$(mktemp -d)
chmod 700 "$work"
export CONTAINERS_CONF="$work/containers.conf"
cleanup() {
  local rc=$?
  if [ "$rc" -ne 0 ] && command -v podman >/dev/null; then
    echo "--- bot log (last 40 lines) ---" >&2
    podman logs --tail 40 "$NAME-bot" >&2 2>&1 || true
  fi
  if command -v podman >/dev/null; then
    podman pod rm -f -t 5 "$NAME" >/dev/null 2>&1 || true
    podman volume rm -f "$NAME-data" >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap "exit 143" TERM
trap "exit 130" INT

# -- tools ----------------------------------------------------------------------------------------------------
need=()
for tool in podman mmdebstrap runc curl; do command -v "$tool" >/dev/null || need+=("$tool"); done
if [ "${#need[@]}" -gt 0 ]; then
  step "installing ${need[*]} (Debian packages)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman mmdebstrap runc uidmap curl >/dev/null
fi
command -v go >/dev/null || { echo "error: Go is needed to build the Weaviate server (as for make test)" >&2; exit 1; }

cat >"$CONTAINERS_CONF" <<'EOF'
[containers]
default_ulimits = []
pids_limit = 0

[engine]
runtime = "runc"
EOF

# -- the base image (once per machine) ------------------------------------------------------------------------
if [ -n "${VERBATIM_IMAGE_REBUILD_BASE:-}" ] || ! podman image exists "$BASE"; then
  step "making the base image $BASE with mmdebstrap (Debian bookworm, minbase)"
  mmdebstrap --quiet --variant=minbase --include=python3,python3-venv,ca-certificates \
    bookworm "$work/rootfs.tar"
  podman import --quiet --change 'CMD ["/bin/bash"]' "$work/rootfs.tar" "$BASE" >/dev/null
  rm -f "$work/rootfs.tar"
else
  step "base image $BASE is there (VERBATIM_IMAGE_REBUILD_BASE=1 makes it again)"
fi

# -- this machine's build settings, for the build only --------------------------------------------------------
ca=""
for candidate in "${SSL_CERT_FILE:-}" "${PIP_CERT:-}" /etc/ssl/certs/ca-certificates.crt; do
  if [ -n "$candidate" ] && [ -f "$candidate" ]; then ca=$candidate; break; fi
done
{
  echo "[global]"
  if [ -n "$ca" ]; then echo "cert = /etc/ssl/certs/ca-certificates.crt"; fi
  for key in index-url extra-index-url trusted-host timeout; do
    value=$(pip3 config get "global.$key" 2>/dev/null || true)
    env_name="PIP_$(echo "$key" | tr a-z- A-Z_)"
    value=${!env_name:-$value}
    if [ -n "$value" ]; then echo "$key = $value"; fi
  done
} >"$work/pip.conf"
: >"$work/go.env"
for key in GOPROXY GOSUMDB GONOSUMDB GOPRIVATE GONOPROXY GOINSECURE GOFLAGS; do
  echo "$key=$(go env "$key")" >>"$work/go.env"
done
chmod 600 "$work/pip.conf" "$work/go.env"
build_volumes=(
  -v "$work/pip.conf:/etc/pip.conf:ro"
  -v "$work/go.env:/root/.config/go/env:ro"
  # The local base has no Go: this machine's toolchain, and its module and build caches, which make a warm
  # Weaviate build a link step instead of a long compile.
  -v "$(go env GOROOT):/usr/local/go:ro"
  -v "$(go env GOMODCACHE):/root/go/pkg/mod"
  -v "$(go env GOCACHE):/root/.cache/go-build"
)
if [ -n "$ca" ]; then build_volumes+=(-v "$ca:/etc/ssl/certs/ca-certificates.crt:ro"); fi
mkdir -p "$(go env GOMODCACHE)" "$(go env GOCACHE)"

# -- the image ------------------------------------------------------------------------------------------------
previous=$(podman image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)
step "building $IMAGE (podman build --format docker, BASE_IMAGE=GO_IMAGE=$BASE)"
podman build --quiet --format docker --network host \
  --build-arg BASE_IMAGE="$BASE" --build-arg GO_IMAGE="$BASE" \
  "${build_volumes[@]}" -t "$IMAGE" -f Containerfile . >/dev/null
current=$(podman image inspect --format '{{.Id}}' "$IMAGE")
if [ -n "$previous" ] && [ "$previous" != "$current" ]; then podman rmi "$previous" >/dev/null 2>&1 || true; fi
# The build stages are the cache of the next run (the Weaviate build above all): name them (from the layer cache,
# in seconds), then drop the unnamed leftovers of earlier builds, so that repeated runs do not fill the disk.
for stage in weaviate app; do
  podman build --quiet --format docker --network host \
    --build-arg BASE_IMAGE="$BASE" --build-arg GO_IMAGE="$BASE" \
    "${build_volumes[@]}" --target "$stage" -t "${IMAGE%:*}-stage-$stage:${IMAGE##*:}" -f Containerfile . >/dev/null
done
podman image prune -f >/dev/null
step "image built: $(podman image inspect --format '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}')"

# Nothing of this machine's settings went in (no pip.conf, Go env, toolchain or cache, not even an empty mount
# point), and the image runs as its own non-root user.
podman run --rm --no-healthcheck --user 0 --entrypoint sh "$IMAGE" -c \
  'test ! -e /etc/pip.conf && test ! -e /root/.config/go && test ! -e /usr/local/go && test ! -e /root/go' \
  || { echo "error: the image holds something mounted at build time" >&2; exit 1; }
[ "$(podman image inspect --format '{{.Config.User}}' "$IMAGE")" = verbatim ] \
  || { echo "error: the image does not run as the user verbatim" >&2; exit 1; }
# e5 computes on ONNX Runtime in the image (no compiler went into it): one query's vector, unit length.
norm=$(podman run --rm --no-healthcheck --entrypoint python3 "$IMAGE" -c 'import numpy as np
from retrieval.encoder.runtime import E5Encoder
print(round(float(np.linalg.norm(E5Encoder().embed(["Где сбросить пароль?"], "query")[0])), 3))')
[ "$norm" = 1.0 ] || { echo "error: e5 did not embed on ONNX Runtime in the image ($norm)" >&2; exit 1; }
step "e5 runs on ONNX Runtime"

# -- run it: the README's `podman run`, in a pod beside a Slack stand-in ---------------------------------------
# The bot checks its Slack token at start-up; here a stand-in answers in the same pod (loopback only). So the
# port is published by the pod, and .env holds the stand-in's test credentials.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
api_token=$(python3 -c 'import secrets; print(secrets.token_urlsafe(24))')
podman pod create --name "$NAME" -p "127.0.0.1:$port:3000" >/dev/null
podman run -d --pod "$NAME" --name "$NAME-slack" --no-healthcheck \
  -v "$PWD/tests:/app/tests:ro" -v "$PWD/scripts/slack_standin.py:/app/slack_standin.py:ro" \
  "$IMAGE" python3 /app/slack_standin.py >/dev/null
slack_url=""
for _ in $(seq 1 60); do
  slack_url=$(podman logs "$NAME-slack" 2>/dev/null | sed -n 's/^SLACK_API_URL=//p' | head -1)
  [ -n "$slack_url" ] && break
  sleep 0.5
done
[ -n "$slack_url" ] || { echo "error: the Slack stand-in did not start" >&2; podman logs "$NAME-slack" >&2; exit 1; }

# .env, as the README says: a copy of .env.example with the required settings filled in.
cp .env.example "$work/.env"
cat >>"$work/.env" <<EOF
SLACK_BOT_TOKEN=xoxb-1-standin-bot-token
SLACK_SIGNING_SECRET=standin-signing-secret
SLACK_API_URL=$slack_url
API_TOKEN=$api_token
EOF
chmod 600 "$work/.env"

summary() {  # the counts of an `ingest --json` report; "again": nothing new, everything skipped
  python3 - "$@" <<'PY'
import json, sys
counts = json.load(open(sys.argv[1]))["summary"]
assert counts["failed"] == 0, counts
if sys.argv[2:] == ["again"]:
    assert counts["ingested"] == counts["replaced"] == 0 and counts["skipped"] > 0, counts
else:
    assert counts["ingested"] > 0, counts
print(counts)
PY
}
# Podman logs an error for each container with a HEALTHCHECK when there is no systemd to schedule the checks; the
# check itself still works (podman healthcheck run, below). Those lines are dropped, anything else is shown.
quiet_health() { grep -v 'unable to get systemd connection' >&2 || true; }

# The bot starts only on an index that has documents: ingest once into the volume, then serve.
podman volume create "$NAME-data" >/dev/null
step "podman run --rm -v $NAME-data:/data --env-file .env … verbatim ingest /app/demo/corpus (--json, to check the counts)"
podman run --rm -v "$NAME-data:/data" --env-file "$work/.env" "$IMAGE" \
  verbatim ingest --json /app/demo/corpus 2> >(quiet_health) >"$work/ingest.json"
step "ingested: $(summary "$work/ingest.json")"

step "starting the bot: -v $NAME-data:/data --env-file .env (pod port 127.0.0.1:$port -> 3000)"
podman run -d --pod "$NAME" --name "$NAME-bot" -v "$NAME-data:/data" --env-file "$work/.env" "$IMAGE" \
  2> >(quiet_health) >/dev/null

ready=""
for _ in $(seq 1 150); do
  if curl -fsS -m 5 "http://127.0.0.1:$port/readyz" >"$work/readyz.json" 2>/dev/null; then ready=1; break; fi
  [ "$(podman inspect --format '{{.State.Running}}' "$NAME-bot")" = true ] \
    || { echo "error: the bot exited before it was ready" >&2; exit 1; }
  sleep 2
done
[ -n "$ready" ] || { echo "error: /readyz did not answer 200 within 300 s" >&2; exit 1; }
step "ready: $(cat "$work/readyz.json")"
podman healthcheck run "$NAME-bot" >/dev/null || { echo "error: the image's HEALTHCHECK fails" >&2; exit 1; }
step "HEALTHCHECK passes"

step "POST /api/ask: $QUESTION"
curl -fsS -m 120 -H "Authorization: Bearer $api_token" -H "Content-Type: application/json" \
  -d "{\"question\": \"$QUESTION\"}" "http://127.0.0.1:$port/api/ask" >"$work/answer.json"
unauthorized=$(curl -s -o /dev/null -w '%{http_code}' -m 30 -H "Content-Type: application/json" \
  -d '{"question": "x"}' "http://127.0.0.1:$port/api/ask")
[ "$unauthorized" = 401 ] || { echo "error: /api/ask without the token answered $unauthorized, not 401" >&2; exit 1; }
python3 - "$work/answer.json" <<'EOF'
import json, sys
answer = json.load(open(sys.argv[1]))
assert answer["status"] == "answered", answer
assert answer["citations"], answer
for citation in answer["citations"]:
    assert citation["exact_quote"].strip() and citation["document_id"] and citation["title"], citation
assert any("refund" in c["exact_quote"].lower() for c in answer["citations"]), answer
assert answer["exchange_id"] and answer["timings_ms"]["total"] > 0, answer
print("[image-test] answer:", answer["answer"][:160].replace("\n", " "))
print("[image-test] cited:", ", ".join(sorted({c["title"] for c in answer["citations"]})))
EOF
step "podman exec … verbatim ingest /app/demo/corpus (into the running bot's home; unchanged ones are skipped)"
podman exec "$NAME-bot" verbatim ingest --json /app/demo/corpus >"$work/reingest.json"
step "ingested again: $(summary "$work/reingest.json" again)"
step "passed (total $(( $(date +%s) - started )) s)"
