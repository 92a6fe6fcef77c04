# iop: one image for the edge and the node agent (the command picks which).
# Build:  docker build -t iop .
# Node 22 (LTS); the code itself also runs on Node >= 20.19 (package.json "engines").
FROM node:22-bookworm-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json turbo.json tsconfig.base.json buf.yaml buf.gen.yaml ./
COPY proto ./proto
COPY packages ./packages
COPY apps ./apps
COPY scripts ./scripts
# npm ci: exactly the lockfile's versions, or fail.
RUN npm ci --no-audit --no-fund && npm run build && npm prune --omit=dev

FROM node:22-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build --chown=root:root /app /app
# Writable places for the unprivileged `node` user, created in the image so that a named volume
# mounted there starts with this ownership: /data (the edge's Responses store, IOP_DATA_DIR) and
# the cache of downloaded models. /models holds GGUF files for the embedded backend (read-only mount).
RUN mkdir -p /data /models /home/node/.cache && chown node:node /data /home/node/.cache
ENV IOP_DATA_DIR=/data
ENV IOP_MODELS_PATH=/models
USER node
VOLUME ["/data"]
# 8080 HTTP API, 8081 agent tunnel (edge); 8082 the agent's /healthz, /readyz and /metrics.
EXPOSE 8080 8081 8082
CMD ["node", "apps/edge/dist/main.js", "--host", "0.0.0.0", "--tunnel-host", "0.0.0.0"]
