#!/usr/bin/env bash
# The whole test suite, as `make test` and CI run it: a throwaway PostgreSQL, the migration drift check, pytest.
# Outside CI a machine that cannot start PostgreSQL still runs everything else (its tests skip, saying why);
# with CI set, that is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin

if pg_env=$(scripts/postgres.sh start); then
  eval "$pg_env"
  trap 'scripts/postgres.sh stop >/dev/null 2>&1 || true' EXIT
elif [ -n "${CI:-}" ]; then
  echo "error: PostgreSQL could not be started for the tests (see above)" >&2
  exit 1
else
  echo "warning: PostgreSQL could not be started; its tests will be skipped" >&2
fi

# The review desk's browser test drives Debian's chromium; install it here, not inside the first test.
if chromium=$(scripts/chromium.sh); then
  export CHROMIUM="$chromium"
elif [ -n "${CI:-}" ]; then
  echo "error: chromium could not be installed for the browser test (see above)" >&2
  exit 1
fi

# Models and migrations must never drift: `alembic check` on an upgraded empty database, SQLite and PostgreSQL.
sqlite_dir=$(mktemp -d)
for url in "sqlite+aiosqlite:///$sqlite_dir/check.sqlite3" ${VERBATIM_TEST_POSTGRES_URL:+"$VERBATIM_TEST_POSTGRES_URL"}; do
  $BIN/alembic -x url="$url" upgrade head >/dev/null
  $BIN/alembic -x url="$url" check
  $BIN/alembic -x url="$url" downgrade base >/dev/null
done
rm -rf "$sqlite_dir"

$BIN/pytest "$@"
