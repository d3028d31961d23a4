# Tandem as a container: the headless daemon on port 9999 with its data in /data.
#   docker build -t tandem .
#   docker run -d --name tandem -p 9999:9999 -v tandem-data:/data tandem

# ---- build: install everything, compile the native modules for this Node, bundle, then drop dev dependencies
FROM node:24-bookworm-slim AS build
WORKDIR /app
# better-sqlite3 compiles from source when no prebuilt binary is reachable.
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 make g++ \
    && rm -rf /var/lib/apt/lists/*
# Electron is a dev dependency for the desktop app; its binary is never needed here.
ENV ELECTRON_SKIP_BINARY_DOWNLOAD=1
COPY package.json package-lock.json ./
RUN npm ci
COPY . .
RUN npx electron-vite build \
    && npm prune --omit=dev

# ---- runtime: the bundle, production node_modules built above for this same Node, and resources/
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production \
    DATA_DIR=/data \
    PORT=9999
RUN groupadd --system tandem \
    && useradd --system --gid tandem --home-dir /data --shell /usr/sbin/nologin tandem \
    && mkdir -p /data \
    && chown tandem:tandem /data \
    && chmod 0700 /data
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/out ./out
COPY --from=build /app/resources ./resources
COPY --from=build /app/bin ./bin
RUN ln -s /app/bin/tandem.mjs /usr/local/bin/tandem
USER tandem
VOLUME ["/data"]
EXPOSE 9999
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 9999) + '/api/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The daemon stops its services and closes the HTTP server on SIGTERM, then exits 0.
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "out/main/index.js", "--headless"]
