#!/usr/bin/env bash
# Makes /opt/hfvenv: transformers 4.38.2 over Debian's Python and torch 1.13
# (--system-site-packages), for regenerating test/models' fixtures. The
# tests themselves read the committed fixtures and need none of this.
set -euo pipefail
venv=${1:-/opt/hfvenv}
if ! "$venv/bin/python" -c "import transformers" 2> /dev/null; then
  /usr/bin/python3 -m venv --system-site-packages "$venv"
  "$venv/bin/pip" install --quiet transformers==4.38.2
fi
"$venv/bin/python" -c "import transformers, torch; print('transformers', transformers.__version__, 'torch', torch.__version__)"
