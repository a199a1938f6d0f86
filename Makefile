# provider-rook: the two commands a newcomer needs are `make demo` and `make test`.
SHELL := bash
.DEFAULT_GOAL := help
NPM ?= npm

.PHONY: help install build gen check check-gen check-chart typecheck lint format format-check test unit demo demo-placement demo-down e2e e2e-local bench bench-clusters chaos chaos-small soak image image-run release docs clean

help: ## List targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

# npm ci installs exactly the lock file, and fails when it no longer matches package.json (so CI does).
node_modules/.package-lock.json: package.json package-lock.json
	$(NPM) ci --no-fund --no-audit
	@touch $@

install: node_modules/.package-lock.json ## Install the locked npm dependencies (Node 24 comes with them)

build: install ## Compile src/ to dist/
	$(NPM) run build

gen: install ## Regenerate crds/ (from src/apis) and the roles in config/rbac/ (from src/backends/index.ts)
	$(NPM) run gen

check-gen: install
	$(NPM) run -s gen:check

check-chart: install ## helm lint the chart, and check config/provider/ is its rendering (builds helm once)
	$(NPM) run -s chart:check

typecheck: install
	$(NPM) run -s typecheck

lint: install
	$(NPM) run -s lint

format: install ## Format the TypeScript and JavaScript with Prettier
	$(NPM) run -s format

format-check: install
	$(NPM) run -s format:check

test: install check-gen check-chart typecheck lint format-check docs ## Everything CI runs: generated files (CRDs, roles, API reference), types, lint, formatting, the docs site, unit, integration and e2e specs on local control planes, then chaos-small
	$(NPM) test -- --ci --json --outputFile=.local/jest-results.json; status=$$?; $(NPM) run -s test:slowest; exit $$status
	$(MAKE) --no-print-directory chaos-small

# mkdocs and its theme, pinned in docs/requirements.txt, in a virtualenv of the project's own.
DOCS_VENV := .local/docs-venv
$(DOCS_VENV)/.installed: docs/requirements.txt
	python3 -m venv $(DOCS_VENV)
	$(DOCS_VENV)/bin/pip install --quiet --disable-pip-version-check -r docs/requirements.txt
	@touch $@

docs: $(DOCS_VENV)/.installed ## Build the documentation site from docs/ into .local/site (strict: a broken link or a page missing from the nav fails)
	$(DOCS_VENV)/bin/mkdocs build --strict --quiet

check: install check-gen typecheck lint format-check unit ## The fast loop, no clusters: generated files, types, lint, formatting and unit tests

unit: install ## Unit tests only (no clusters)
	$(NPM) test -- test/unit --globalSetup= --globalTeardown=

e2e: install ## The e2e specs on three kind clusters (needs Docker, kind, kubectl); KEEP_CLUSTERS=1 keeps them
	$(NPM) run -s e2e:preflight
	E2E_BACKEND=kind $(NPM) test -- test/e2e/ --globalSetup= --globalTeardown=

e2e-local: install ## The same e2e specs on local control planes (part of make test)
	E2E_BACKEND=local $(NPM) test -- test/e2e/ --globalSetup= --globalTeardown=

# Not $(or $(SIZES),...): make's functions split their arguments at commas.
SIZES ?= 100,500,1000,5000
bench: install ## The scale curve (prints a table; JSON and SVG under .local/bench/): 100, 500, 1000 and 5000 stores; SIZES=100,500 picks
	$(NPM) run -s bench -- --sizes $(SIZES)

bench-clusters: install ## How long local control planes take to start
	$(NPM) run -s bench:clusters

chaos: install ## Faults under load (kills, outages, restarts, failover, 410 Gone, secrets scan, hostile input); prints a table, fails on a violated invariant. SIZE=small, SCENARIOS=1,2,6
	$(NPM) run -s chaos

chaos-small: install ## The CI size of make chaos: scenarios 1, 2, 6, 8, 9 and 10, under 5 minutes
	$(NPM) run -s chaos -- --size small --scenarios 1,2,6,8,9,10

clean: ## Stop all local clusters and remove build output
	-$(NPM) run -s clusters -- down
	rm -rf dist .local

demo: install ## SeaweedFS (the default), then the four steps of config/samples/ and the other backends, on local clusters, live
	$(NPM) run -s demo

demo-placement: install ## Claims spread by the scheduler over three targets labelled by region, with a capacity
	$(NPM) run -s demo:placement

soak: install ## Claim churn on two targets for MINUTES=30 with an outage in the middle; fails if RSS, heap, handles, timers or sockets grow beyond noise (run `npm run soak -- --calm --minutes 8` first: it measures that noise). Not in CI
	$(NPM) run -s soak

image: install ## Build the container image without a Docker daemon (mmdebstrap, umoci, skopeo) into .local/provider-rook-VERSION.oci.tar
	$(NPM) run -s image

release: install ## The release VERSION=x.y.z under .local/release/x.y.z/: packaged chart, OCI image archive, CRDs, install manifest, SHA256SUMS (package.json and Chart.yaml must say x.y.z)
	@test -n "$(VERSION)" || { echo "make release: set VERSION, e.g. make release VERSION=0.2.0" >&2; exit 1; }
	$(NPM) run -s release -- $(VERSION)

image-run: image ## Run that image as the chart's Deployment runs it (bubblewrap: its user, read-only root, no capabilities) against local control planes
	$(NPM) run -s image:run

demo-down: install ## Stop the demos' processes and remove their clusters
	$(NPM) run -s demo -- down
