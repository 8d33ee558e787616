#!/usr/bin/env bash
# What `make test-browser` needs, installed only when missing: Debian's `chromium` package and the
# playwright release pinned in pyproject.toml's `browser` extra (1.64.1, built for Chromium 156).
# playwright drives /usr/bin/chromium directly: no `playwright install`, no browser download.
# Usage: tests/browser/install.sh [path/to/venv/python]   (run from the repository root)
set -euo pipefail
PY=${1:-.venv/bin/python}
CHROMIUM=/usr/bin/chromium

fail() {
    echo "make test-browser: $*" >&2
    echo "make test-browser: the browser check did NOT run, so it did not pass." >&2
    exit 1
}

if [ ! -x "$CHROMIUM" ]; then
    command -v apt-get >/dev/null ||
        fail "$CHROMIUM is missing and there is no apt-get to install it. Install a Chromium at $CHROMIUM (Debian: apt-get install chromium) and re-run."
    if [ "$(id -u)" = 0 ]; then
        SUDO=()
    elif command -v sudo >/dev/null; then
        SUDO=(sudo)
        [ -t 0 ] || SUDO=(sudo -n)  # no terminal to ask for a password: fail instead of hanging
    else
        fail "$CHROMIUM is missing; installing it needs root (or sudo): run 'apt-get install -y chromium' as root, then re-run."
    fi
    echo "Installing Debian's chromium (once): ${SUDO[*]} apt-get install -y chromium"
    { "${SUDO[@]}" apt-get update -q && "${SUDO[@]}" apt-get install -y -q chromium; } ||
        fail "could not install Debian's chromium package (no root rights, no network, or no such package here). Install it yourself (apt-get install -y chromium) and re-run."
    [ -x "$CHROMIUM" ] || fail "apt-get installed chromium but $CHROMIUM does not exist."
fi

# The pinned playwright, unless that exact version is already in the venv.
if ! "$PY" - <<'PYEOF'
import importlib.metadata as md
import sys
import tomllib

extra = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["browser"]
pin = next(r.split("==")[1] for r in extra if r.startswith("playwright=="))
try:
    sys.exit(0 if md.version("playwright") == pin else 1)
except md.PackageNotFoundError:
    sys.exit(1)
PYEOF
then
    echo "Installing the pinned playwright (once): pip install -e '.[browser]'"
    "$PY" -m pip install --quiet --disable-pip-version-check -e '.[browser]' ||
        fail "could not pip-install playwright (see pyproject.toml, [project.optional-dependencies] browser)."
fi
