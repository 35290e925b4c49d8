# syntax=docker/dockerfile:1
# converge daemon image: compiled with dev dependencies, run with production dependencies only, as a non-root user.
#   docker build -t converge .
#   docker run --read-only --tmpfs /tmp -v "$PWD/manifests:/manifests:ro" -e CONVERGE_API_URL=... \
#     -e CONVERGE_API_KEY=... -e REDIS_URL=redis://redis:6379 -p 8080:8080 converge
# CONVERGE_API_URL is required: converge has no default service, and without it the daemon exits 1 at once.

ARG NODE_VERSION=20.20

# ---- build: full dependencies, TypeScript compiled to dist/, the CLI bundled (scripts/bundle.mjs)
FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/bundle.mjs ./scripts/
COPY src ./src
RUN npx tsc -p tsconfig.build.json && node scripts/bundle.mjs

# ---- deps: production dependencies only
FROM node:${NODE_VERSION}-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# ---- runtime: no compiler, no dev dependencies, nothing writable by the process
FROM node:${NODE_VERSION}-bookworm-slim AS runtime
ENV NODE_ENV=production \
    CONVERGE_HTTP_HOST=0.0.0.0 \
    CONVERGE_HTTP_PORT=8080
WORKDIR /app
# Owned by root and not writable by the runtime user: the container also runs with a read-only root filesystem.
COPY package.json ./
COPY config ./config
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /src/dist ./dist
RUN chmod 0755 /app/dist/cli/main.js \
 && ln -s /app/dist/cli/main.js /usr/local/bin/converge \
 && mkdir -p /manifests
# The image's "node" user, by number so Kubernetes' runAsNonRoot can verify it.
USER 1000:1000
EXPOSE 8080
# Slim images have no curl: ask node itself. /healthz answers while the process is alive.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.CONVERGE_HTTP_PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Requires CONVERGE_API_URL (see the top of this file).
# converge handles SIGTERM itself (graceful stop: finish or hand back active jobs, close Redis, exit 0), all within
# shutdown_timeout (25 s by default) whatever Redis or the service is doing: inside Kubernetes' 30 s grace period and
# `docker stop`'s default 10 s only with --shutdown-timeout 8s (or `docker stop -t 30`).
STOPSIGNAL SIGTERM
CMD ["converge", "run", "/manifests"]
