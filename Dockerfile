# syntax=docker/dockerfile:1
# Build: esbuild bundles the service into one file (plus PGlite's wasm assets).
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The client workspace package (npm ci builds it: the root's prepare script runs its tsc).
COPY client/package.json client/tsconfig.json ./client/
COPY client/src ./client/src
RUN npm ci --no-audit --no-fund
COPY tsconfig.json build.mjs ./
COPY src ./src
RUN npm run build

# Run: only the bundle, on a slim Node image, as the unprivileged `node` user.
FROM node:20-bookworm-slim
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
