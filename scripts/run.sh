#!/usr/bin/env bash
# Runs dpportal in the embedded default: SQLite, a filesystem Celery broker, a real
# worker process (with beat) and the web server, with demo users and a demo dataset.
#   PORT   default 8000
# Set DATABASE_URL / REDIS_URL to run the same against PostgreSQL and Redis.
set -euo pipefail
source "$(dirname "$0")/_venv.sh" requirements.txt

export DEBUG="${DEBUG:-1}"
# Static files as production serves them: collected with content-hashed names and
# gzip copies, served by whitenoise (runserver --nostatic below), not read raw.
export DPPORTAL_STATIC_COLLECTED=1
PORT="${PORT:-8000}"
mkdir -p var/log var/broker/out var/broker/processed var/broker/control

.venv/bin/python manage.py collectstatic --noinput >/dev/null
.venv/bin/python manage.py migrate --noinput >/dev/null
.venv/bin/python manage.py seed_demo

.venv/bin/celery -A dpportal.celery worker --beat --concurrency 2 -l INFO \
  --schedule var/celerybeat-schedule >var/log/worker.log 2>&1 &
WORKER=$!
trap 'kill $WORKER 2>/dev/null; wait $WORKER 2>/dev/null' EXIT INT TERM

echo
echo "dpportal is running at http://127.0.0.1:$PORT/   (worker log: var/log/worker.log)"
echo "Stop with Ctrl-C."
.venv/bin/python manage.py runserver "127.0.0.1:$PORT" --noreload --nostatic
