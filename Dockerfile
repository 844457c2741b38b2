# syntax=docker/dockerfile:1
# Build: esbuild bundles the service into one file (plus PGlite's wasm assets). The base image is
# pinned to an exact Node release, so a rebuild runs what was tested.
FROM node:20.20.2-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The workspace packages: the service stands on the protocol package and takes the x402 wire from the client.
COPY packages/protocol/package.json packages/protocol/tsconfig.json ./packages/protocol/
COPY packages/protocol/src ./packages/protocol/src
COPY packages/client/package.json packages/client/tsconfig.json ./packages/client/
COPY packages/client/src ./packages/client/src
# --ignore-scripts: the build needs esbuild, TypeScript and PGlite, none of which needs an install
# script; the dev-only tools (ganache, solc) are downloaded by `npm ci` but their native add-ons
# are never compiled, and nothing of node_modules leaves this stage. The root's `prepare` (the
# client's tsc) is skipped with them, so it runs as its own step.
RUN npm ci --no-audit --no-fund --ignore-scripts
RUN npm run build:client
COPY tsconfig.json build.mjs ./
COPY src ./src
RUN npm run build

# Run: only the bundle, on the same slim Node image, as the unprivileged `node` user. It listens on
# every interface, so it starts only with API_KEY set (a hosted deployment), or with
# SANDBOX_PUBLIC=1 for an open sandbox exposed on purpose; anything else exits with one line.
# Keys (docs/keys.md) come from a secret mount, never from a layer of the image: files of mode 0600
# owned by uid 1000 (the image's `node` user), made with `keys generate --out DIR`, then
#   docker run --mount type=bind,source=DIR,target=/run/secrets,readonly \
#     -e ISSUER_KEY=file:/run/secrets/issuer.key -e WEBHOOK_KEY=file:/run/secrets/webhook.key -e API_KEY=… IMAGE
# (with Compose: `secrets:` with mode 0400 and uid 1000). Without them the keys are generated into /data/keys.
FROM node:20.20.2-bookworm-slim
ENV NODE_ENV=production \
    PORT=4280 \
    HOST=0.0.0.0 \
    DATA_DIR=/data
WORKDIR /app
COPY --from=build /app/dist ./dist
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 4280
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 4280) + '/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
STOPSIGNAL SIGTERM
CMD ["node", "dist/escrow-settlement.mjs"]
