# syntax=docker/dockerfile:1
# The pipemorph daemon. Build: docker build -t ghcr.io/pipemorph/pipemorph:0.1.0 .
# Run:   docker run -e REDIS_URL=redis://redis:6379 -p 8080:8080 ghcr.io/pipemorph/pipemorph:0.1.0
ARG NODE_IMAGE=node:20-bookworm-slim

# --- build: compile TypeScript with the pinned toolchain ---
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY schemas ./schemas
COPY config ./config
COPY src ./src
COPY bench ./bench
RUN npm run build

# --- runtime: production dependencies and the compiled daemon only ---
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist/src ./dist/src
COPY --from=build /app/dist/schemas ./dist/schemas
COPY config ./config
COPY schemas ./schemas
# The image's `node` user (uid 1000); Kubernetes runs it with runAsNonRoot and a read-only root filesystem.
USER 1000:1000
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=3s CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/health/live').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
CMD ["node", "--no-memory-reducer", "dist/src/daemon/main.js"]
