# Sourced by scripts/run.sh and scripts/test.sh: make .venv and install the pinned
# requirements file given as $1, reinstalling only when that file changes.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
if [ ! -x .venv/bin/python ]; then
  echo "creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
req="$1"
stamp=".venv/.installed-$(basename "$req")"
want="$(cat requirements*.txt | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "installing $req into .venv"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip 2>&1 | grep -v '^WARNING: Location' || true
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$req" 2>&1 | grep -v '^WARNING: Location' || true
  .venv/bin/python -c "import django, celery, pyarrow, numpy" # fail loudly if the install did not work
  echo "$want" > "$stamp"
fi
# The translation catalogues (.mo are not in the repository; rebuilt when a .po changes)
.venv/bin/python -m dpportal.catalogues
