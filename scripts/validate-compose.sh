#!/usr/bin/env bash
# Validates docker-compose.yml offline (no Docker engine needed) for both profiles: the default
# one (`.env` selects gpu) and cpu. Debian's packages carry only docker-compose v1, which ignores
# profiles, so the check is scripts/validate-compose.mjs: Compose interpolation, the Compose
# Specification JSON Schema and profile resolution (every dependency of an enabled service enabled).
# It also checks that the file refuses to start without its secrets.
# The two-edge deployment (deploy/compose.multi-edge.yml) is checked the same way.
set -euo pipefail
cd "$(dirname "$0")/.."
secrets=(IOP_API_KEYS=sk-validate-0001 IOP_JOIN_TOKEN=join-validate-0001)
env "${secrets[@]}" node scripts/validate-compose.mjs
env "${secrets[@]}" COMPOSE_PROFILES=cpu node scripts/validate-compose.mjs
if env -u IOP_API_KEYS -u IOP_JOIN_TOKEN node scripts/validate-compose.mjs 2>/dev/null; then
  echo "docker-compose.yml: starts without IOP_API_KEYS and IOP_JOIN_TOKEN; it must refuse" >&2
  exit 1
fi
echo "docker-compose.yml: valid (profiles gpu and cpu); refuses to start without secrets"
env "${secrets[@]}" node scripts/validate-compose.mjs --file deploy/compose.multi-edge.yml
echo "deploy/compose.multi-edge.yml: valid"
