# iop: one image for the edge and the node agent (the command picks which).
# Build:  docker build -t iop .
FROM node:20-bookworm-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json turbo.json tsconfig.base.json buf.yaml buf.gen.yaml ./
COPY proto ./proto
COPY packages ./packages
COPY apps ./apps
COPY scripts ./scripts
RUN npm install --no-audit --no-fund && npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app /app
# Models for the embedded backend are looked up here (mount a volume with GGUF files).
ENV IOP_MODELS_PATH=/models
USER node
EXPOSE 8080 8081
CMD ["node", "apps/edge/dist/main.js", "--host", "0.0.0.0", "--tunnel-host", "0.0.0.0"]
