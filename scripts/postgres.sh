#!/usr/bin/env bash
# A throwaway PostgreSQL for the storage tests, on this machine, on 127.0.0.1 only, with trust auth.
#
#   eval "$(scripts/postgres.sh start)"   # starts it (or reuses the running one) and exports
#                                         #   VERBATIM_TEST_POSTGRES_URL=postgresql+asyncpg://postgres@127.0.0.1:PORT/verbatim_test
#   scripts/postgres.sh url               # prints the export line of the running server
#   scripts/postgres.sh status            # says whether it runs (exit 1 when not)
#   scripts/postgres.sh stop              # stops it and deletes its data (it is a test server)
#   scripts/postgres.sh pause             # stops it but keeps its data and port: `start` brings it back as it was
#
# Works on a fresh Debian machine: when no postgres/initdb is found (PATH, then /usr/lib/postgresql/*/bin),
# it installs Debian's postgresql package. initdb refuses to run as root, so as root the server runs as the
# `postgres` system user. Its data lives in $VERBATIM_PG_DIR (default: $TMPDIR/verbatim-test-pg-<uid>), a
# place that user can reach; trust auth is acceptable because it only listens on loopback and holds test data.
# Only the export line goes to stdout; progress and errors go to stderr.
set -euo pipefail

PG_DIR="${VERBATIM_PG_DIR:-${TMPDIR:-/tmp}/verbatim-test-pg-$(id -u)}"
DATA="$PG_DIR/data"
PORT_FILE="$PG_DIR/port"
LOG="$PG_DIR/postgres.log"
DB_NAME="verbatim_test"

say() { echo "postgres.sh: $*" >&2; }
die() { say "$*"; exit 1; }

find_bindir() {
    local candidate
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1 && command -v postgres >/dev/null 2>&1; then
        dirname "$(readlink -f "$(command -v initdb)")"
        return 0
    fi
    # Debian keeps the server binaries out of PATH; take the newest major version.
    for candidate in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4,4 -n -r); do
        if [[ -x "$candidate/initdb" && -x "$candidate/pg_ctl" && -x "$candidate/postgres" ]]; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

install_postgres() {
    local -a sudo=()
    if [[ $(id -u) -ne 0 ]]; then
        sudo -n true 2>/dev/null || die "PostgreSQL is not installed and this user cannot install it: run \`sudo apt-get install -y postgresql\`"
        sudo=(sudo -n)
    fi
    command -v apt-get >/dev/null 2>&1 || die "PostgreSQL is not installed and there is no apt-get here: install PostgreSQL (initdb, pg_ctl, postgres) and retry"
    say "installing PostgreSQL from Debian's packages (apt-get install -y postgresql)"
    if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >&2; then
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >&2
    fi
}

# Run a PostgreSQL program as the user that owns the cluster: `postgres` when we are root, else ourselves.
# From / so that a current folder the postgres user cannot read (say /root) does not matter.
as_owner() {
    if [[ $(id -u) -eq 0 ]]; then
        local runuser
        runuser="$(PATH="$PATH:/usr/sbin:/sbin" command -v runuser)" || die "runuser (util-linux) is needed to run PostgreSQL as the postgres user"
        (cd / && "$runuser" -u postgres -- "$@")
    else
        (cd / && "$@")
    fi
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

is_running() {
    [[ -n "${BINDIR:-}" && -f "$DATA/PG_VERSION" ]] && as_owner "$BINDIR/pg_ctl" status -D "$DATA" >/dev/null 2>&1
}

export_line() {
    echo "export VERBATIM_TEST_POSTGRES_URL=postgresql+asyncpg://postgres@127.0.0.1:$(cat "$PORT_FILE")/$DB_NAME"
}

ensure_database() {
    local port exists
    port="$(cat "$PORT_FILE")"
    exists="$(as_owner "$BINDIR/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -tAc \
        "SELECT 1 FROM pg_database WHERE datname = '$DB_NAME'")"
    if [[ "$exists" != "1" ]]; then
        as_owner "$BINDIR/createdb" -h 127.0.0.1 -p "$port" -U postgres "$DB_NAME"
    fi
}

start() {
    if ! BINDIR="$(find_bindir)"; then
        install_postgres
        BINDIR="$(find_bindir)" || die "PostgreSQL was installed but initdb/pg_ctl/postgres were not found"
    fi
    [[ -x "$BINDIR/psql" && -x "$BINDIR/createdb" ]] || die "psql/createdb were not found next to $BINDIR/postgres"

    if is_running; then
        say "reusing the PostgreSQL already running from $DATA"
        ensure_database
        export_line
        return 0
    fi

    if [[ $(id -u) -eq 0 ]] && ! id postgres >/dev/null 2>&1; then
        useradd --system --no-create-home --shell /usr/sbin/nologin postgres
    fi
    mkdir -p "$PG_DIR"
    chmod 700 "$PG_DIR"
    if [[ $(id -u) -eq 0 ]]; then chown postgres: "$PG_DIR"; fi

    if [[ ! -f "$DATA/PG_VERSION" ]]; then
        rm -rf "$DATA"
        say "initdb in $DATA"
        as_owner "$BINDIR/initdb" -D "$DATA" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null \
            || as_owner "$BINDIR/initdb" -D "$DATA" -U postgres --auth=trust --encoding=UTF8 --locale=C >/dev/null
    fi

    # A paused server comes back on its old port, so clients that knew it reconnect.
    [[ -s "$PORT_FILE" ]] || free_port >"$PORT_FILE"
    local port
    port="$(cat "$PORT_FILE")"
    # A test server: no fsync, so creating a database per test is fast. Never copy these settings to production.
    say "starting PostgreSQL on 127.0.0.1:$port (log: $LOG)"
    if ! as_owner "$BINDIR/pg_ctl" start -D "$DATA" -l "$LOG" -w -t 60 -o \
        "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$PG_DIR -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" >/dev/null; then
        tail -n 20 "$LOG" >&2 || true
        die "PostgreSQL did not start (see $LOG)"
    fi
    ensure_database
    export_line
}

stop() {
    BINDIR="$(find_bindir)" || { say "PostgreSQL is not installed: nothing to stop"; return 0; }
    if is_running; then
        as_owner "$BINDIR/pg_ctl" stop -D "$DATA" -m fast -w >/dev/null
        say "stopped the PostgreSQL in $DATA"
    else
        say "no PostgreSQL running from $DATA"
    fi
    rm -rf "$PG_DIR"
}

pause() {
    BINDIR="$(find_bindir)" || die "PostgreSQL is not installed"
    is_running || die "not running"
    as_owner "$BINDIR/pg_ctl" stop -D "$DATA" -m fast -w >/dev/null
    say "paused the PostgreSQL in $DATA (data and port kept)"
}

status() {
    BINDIR="$(find_bindir)" || die "PostgreSQL is not installed"
    if is_running; then
        say "running on 127.0.0.1:$(cat "$PORT_FILE") from $DATA"
    else
        die "not running"
    fi
}

url() {
    BINDIR="$(find_bindir)" || die "PostgreSQL is not installed"
    is_running || die "not running: run \`eval \"\$(scripts/postgres.sh start)\"\`"
    export_line
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    pause) pause ;;
    status) status ;;
    url) url ;;
    *) die "usage: scripts/postgres.sh start|stop|pause|status|url   (eval \"\$(scripts/postgres.sh start)\" exports VERBATIM_TEST_POSTGRES_URL)" ;;
esac
