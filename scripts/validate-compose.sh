#!/usr/bin/env bash
# Validates the compose files offline (no Docker engine needed) for each of their profiles:
# docker-compose.yml with the default one (`.env` selects gpu), cpu and monitoring, and
# deploy/compose.multi-edge.yml with none and monitoring. Debian's packages carry only
# docker-compose v1, which ignores profiles, so the check is scripts/validate-compose.mjs: Compose
# interpolation, the Compose Specification JSON Schema and profile resolution (every dependency of
# an enabled service enabled). Each file must also refuse to start without each of its secrets.
set -euo pipefail
cd "$(dirname "$0")/.."

# check FILE "SECRET=value ..." PROFILES...: valid with every secret; refused without any one of
# them, naming it.
check() {
  local file="$1" secrets=() name
  read -r -a secrets <<<"$2"
  shift 2
  for profiles in "$@"; do
    env "${secrets[@]}" COMPOSE_PROFILES="$profiles" node scripts/validate-compose.mjs --file "$file"
  done
  for secret in "${secrets[@]}"; do
    name="${secret%%=*}"
    local without=()
    for other in "${secrets[@]}"; do [[ "$other" == "$secret" ]] || without+=("$other"); done
    local errors
    if errors="$(env -u "$name" "${without[@]}" node scripts/validate-compose.mjs --file "$file" 2>&1)"; then
      echo "$file: starts without $name; it must refuse" >&2
      exit 1
    fi
    if ! grep -q "required variable $name is missing" <<<"$errors"; then
      echo "$file: refused without $name, but not for it:" >&2
      echo "$errors" >&2
      exit 1
    fi
  done
  echo "$file: refuses to start without each of ${secrets[*]%%=*}"
}

check docker-compose.yml "IOP_API_KEYS=sk-validate-0001 IOP_JOIN_TOKEN=join-validate-0001" gpu cpu gpu,monitoring cpu,monitoring
check deploy/compose.multi-edge.yml \
  "IOP_API_KEYS=sk-validate-0001 IOP_ADMIN_KEYS=admin-validate-00000001 IOP_JOIN_TOKEN=join-validate-0001 POSTGRES_PASSWORD=pg-validate-0001" \
  "" monitoring
