# provider-rook controller image, for users with Docker (docker build -t provider-rook:0.1.0 .).
# `make image` builds the same image without a daemon (hack/lib/image.ts, from hack/lib/image-spec.ts);
# test/unit/hack/image.test.ts keeps the two in step: entry point and Node's flags, user and group, working
# directory, environment, and the files shipped. The bases differ: distroless here, a Debian base of
# only the libraries node links against there (README, "The image").
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-fund --no-audit
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY hack/prune-modules.ts ./hack/
RUN npx tsc -p tsconfig.build.json --sourceMap false && npm prune --omit=dev && rm -f node_modules/.package-lock.json && \
    node hack/prune-modules.ts node_modules

FROM gcr.io/distroless/nodejs24-debian12:nonroot
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /app/dist ./dist
COPY --from=build /app/node_modules ./node_modules
COPY config/operators ./config/operators
COPY --from=build /app/package.json ./package.json
USER 65532:65532
# Node's flags: see hack/lib/node-flags.ts (why, and what each was measured to cost).
ENTRYPOINT ["/nodejs/bin/node", "--max-semi-space-size=1", "--heap-growing-percent=25", "--no-opt", "--no-maglev", "dist/main.js"]
