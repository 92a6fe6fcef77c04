#!/usr/bin/env bash
# Validates docker-compose.yml offline (no Docker engine needed): the default (gpu) profile and
# the cpu profile must both parse and resolve; so must the two-edge deployment
# (deploy/compose.multi-edge.yml).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v docker-compose >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >/dev/null
  else
    echo "docker-compose is not installed; skipping compose validation" >&2
    exit 0
  fi
fi
docker-compose -f docker-compose.yml config -q
COMPOSE_PROFILES=cpu docker-compose -f docker-compose.yml config -q
echo "docker-compose.yml: valid (profiles gpu and cpu)"
docker-compose -f deploy/compose.multi-edge.yml config -q
echo "deploy/compose.multi-edge.yml: valid"
