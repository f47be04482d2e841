#!/usr/bin/env bash
# Runs the whole test suite on the real services: PostgreSQL and Redis.
#   DATABASE_URL  default postgres://postgres@127.0.0.1:5432/dpportal
#   REDIS_URL     default redis://127.0.0.1:6379/0
#   DPPORTAL_TEST_PROCESSES  side-by-side test processes, default auto: one a core, at most 4
# Extra arguments go to pytest (e.g. scripts/test.sh tests/privacy -x; -n 0 runs in one process).
set -euo pipefail
source "$(dirname "$0")/_venv.sh" requirements-dev.txt

export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/dpportal}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"
export DEBUG="${DEBUG:-1}"
export DPPORTAL_VAR_DIR="${DPPORTAL_VAR_DIR:-$ROOT/var/test}"
mkdir -p "$DPPORTAL_VAR_DIR/static"

# The browser tests drive Debian's chromium; install it when missing and we may.
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing Debian's chromium for the browser tests"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null
fi

# Fail, never fall back, when the real services are not there.
.venv/bin/python - <<'PY'
import os, sys
import psycopg, redis
url = os.environ["DATABASE_URL"].replace("postgres://", "postgresql://", 1)
server, name = url.rsplit("/", 1)
try:
    with psycopg.connect(server + "/postgres", connect_timeout=5, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
except Exception as exc:
    sys.exit(f"PostgreSQL is not reachable at DATABASE_URL: {exc}")
try:
    redis.Redis.from_url(os.environ["REDIS_URL"], socket_connect_timeout=5).ping()
except Exception as exc:
    sys.exit(f"Redis is not reachable at REDIS_URL: {exc}")
PY

.venv/bin/python manage.py makemigrations --check --dry-run >/dev/null || {
  echo "models and migrations disagree: run manage.py makemigrations"; exit 1; }

.venv/bin/ruff check . || { echo "ruff found problems"; exit 1; }

set +e
.venv/bin/python -m pytest -n "${DPPORTAL_TEST_PROCESSES:-auto}" --maxprocesses 4 \
  --dist loadgroup "$@"
status=$?
set -e
if [ "$status" = 5 ]; then
  echo "pytest collected no tests: that is a failure"
  exit 1
fi
exit "$status"
