# provider-rook controller image (build: docker build -t provider-rook:dev .)
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-fund --no-audit
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npx tsc -p tsconfig.build.json && npm prune --omit=dev

FROM gcr.io/distroless/nodejs24-debian12:nonroot
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/package.json ./
COPY config/operators ./config/operators
USER nonroot
# Node's flags: see hack/lib/node-flags.ts (why, and what each was measured to cost).
ENTRYPOINT ["/nodejs/bin/node", "--max-semi-space-size=2", "--heap-growing-percent=25", "dist/main.js"]
