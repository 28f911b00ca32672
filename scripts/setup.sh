#!/usr/bin/env bash
# Create (or reuse) the Python environment for gspo-dynamics and install the package. Idempotent.
#
#   bash scripts/setup.sh [EXTRAS]      e.g. EXTRAS=dev for the test tools
#
# Environment: an active virtualenv ($VIRTUAL_ENV) is used as it is; otherwise ./.venv is created.
# torch: if the environment already imports torch (say a CUDA build), it is kept untouched;
# otherwise torch==2.13.0 is installed first (on the project's machines pip resolves this pin to
# the local CPU build), so the package's open lower bound `torch>=2.1` is then already satisfied.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
extras=${1:-}

if [ -n "${VIRTUAL_ENV:-}" ]; then
    py="$VIRTUAL_ENV/bin/python"
else
    if [ ! -x "$root/.venv/bin/python" ]; then
        echo "setup: creating $root/.venv" >&2
        python3 -m venv "$root/.venv"
    fi
    py="$root/.venv/bin/python"
fi

if ! "$py" -c "import torch" >/dev/null 2>&1; then
    echo "setup: installing torch==2.13.0" >&2
    "$py" -m pip install --quiet --disable-pip-version-check "torch==2.13.0" 2> >(grep -v "is ignored: it is neither" >&2)
fi

target="$root"
[ -n "$extras" ] && target="$root[$extras]"
# Skip the reinstall when the package is already importable from this checkout with its extras.
stamp="$root/.venv/.installed-${extras:-base}"
if [ -n "${VIRTUAL_ENV:-}" ] || [ ! -f "$stamp" ] || [ "$root/pyproject.toml" -nt "$stamp" ]; then
    echo "setup: installing gspo-dynamics${extras:+[$extras]} (editable)" >&2
    "$py" -m pip install --quiet --disable-pip-version-check -e "$target" 2> >(grep -v "is ignored: it is neither" >&2)
    if [[ ",$extras," == *",frameworks,"* ]]; then  # verl's code and shipped YAML, not its (GPU) dependencies
        "$py" -m pip install --quiet --disable-pip-version-check --no-deps "verl==0.9.1" 2> >(grep -v "is ignored: it is neither" >&2)
    fi
    [ -n "${VIRTUAL_ENV:-}" ] || touch "$stamp"
fi
echo "$py"
