#!/usr/bin/env bash
# The console's TypeScript API client is generated, never hand-written:
# dump the OpenAPI document from create_app (no server) and run
# openapi-typescript on it. `web_client.sh check` fails when the committed
# web/src/api/schema.d.ts is not what the current API generates.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON_BIN:-python}
mode=${1:-generate}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$PY" scripts/dump_openapi.py "$tmp/openapi.json"
(cd web && npx --no-install openapi-typescript "$tmp/openapi.json" -o "$tmp/schema.d.ts" >/dev/null)
if [ "$mode" = check ]; then
    if ! diff -q "$tmp/schema.d.ts" web/src/api/schema.d.ts >/dev/null; then
        echo "web/src/api/schema.d.ts is stale: run 'make web-client' and commit it" >&2
        diff -u web/src/api/schema.d.ts "$tmp/schema.d.ts" | head -40 >&2 || true
        exit 1
    fi
    echo "generated API client is current"
else
    cp "$tmp/schema.d.ts" web/src/api/schema.d.ts
    echo "wrote web/src/api/schema.d.ts"
fi
