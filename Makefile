# mnemo: every target installs what it needs into .venv first, so each works on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# helm and promtool for the chart checks (deploy/helm/install-tools.sh).
TOOLS := $(VENV)/tools/bin
ARGS ?=
DATA ?= ../shared/eval/realtalk

.PHONY: run cluster chart chart-check test test-ui screenshots chromium test-e2e-secure test-fast memory-leaks fuzz lint typecheck fmt install asyncapi docs bench-quick bench-ingest bench-embedding bench-log-consumers bench-lore bench-retrieval bench-multilingual bench-context bench-scale bench-cluster-acks bench-pipeline bench-observe bench-documents bench-memory-search chaos up down clean

$(STAMP): pyproject.toml clients/python/pyproject.toml clients/js/package-lock.json workbench/package-lock.json
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,embedded]'
	cd clients/js && npm ci --no-audit --no-fund --loglevel=error
	cd workbench && npm ci --no-audit --no-fund --loglevel=error
	touch $(STAMP)

$(TOOLS)/helm: deploy/helm/install-tools.sh | $(STAMP)
	PYTHON=$(PY) bash deploy/helm/install-tools.sh $(TOOLS)
	touch $@

## The workbench (workbench/: Vite + Preact), built into workbench/dist, which the gateway serves at /workbench/.
WORKBENCH := workbench/dist/index.html
$(WORKBENCH): $(STAMP) workbench/package-lock.json workbench/index.html workbench/vite.config.js $(shell find workbench/src -type f)
	cd workbench && npm run build --silent

install: $(STAMP) $(TOOLS)/helm $(WORKBENCH)

## Debian's Chromium for the browser tests (Playwright drives /usr/bin/chromium and never downloads a browser);
## installing it needs root (CI runs as root). Without it the browser tests skip, except under CI, where they fail.
chromium:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium) \
		|| echo "could not install Debian's chromium (as root: apt-get install chromium); the browser tests will skip"

## Run the whole stack on its embedded default (nats-server, SecantusDB, Qdrant Edge, bundled model).
run: install
	$(VENV)/bin/mnemo run $(ARGS)

## A local cluster: 3 NATS JetStream nodes, SecantusDB, every service replica as its own process (.data-cluster/).
## ARGS="--replicas ingest=3", ARGS="--topology topology.toml", ARGS="restart ingest 2", ARGS=status.
cluster: $(STAMP)
	$(VENV)/bin/mnemo cluster $(ARGS)

## The Helm chart (deploy/helm/mnemo) rendered with its default values (offline: docs/kubernetes.md).
chart: $(STAMP) $(TOOLS)/helm
	@$(PY) -m tests.chart.helm $(ARGS)

## The chart's offline checks: helm lint --strict and helm template (default and production values), the
## Kubernetes objects against Kubernetes's schemas, KEDA and prometheus-operator objects against their CRDs' schemas
## (check-jsonschema), the names it shares with the code, promtool on the alert rules.
chart-check: $(STAMP) $(TOOLS)/helm
	$(PY) -m pytest tests/chart -q $(ARGS)

## Lint, type-check, then every test (unit, contract, chart, integration, e2e, and the workbench's browser tests).
test: install chromium lint typecheck
	$(PY) -m pytest $(ARGS)

## The workbench in headless Chromium against `make run`'s demo: every view, axe-core (`make screenshots` also writes docs/workbench/*.png).
test-ui: install chromium
	$(PY) -m pytest tests/ui $(ARGS)

## The same browser tests, writing the docs' screenshots (docs/workbench/*.png) from the running workbench.
screenshots: install chromium
	MNEMO_UI_SHOTS=1 $(PY) -m pytest tests/ui $(ARGS)

## The end-to-end suite against stacks run `--secure` (TLS, a least-privilege NATS user per service and the platform).
test-e2e-secure: $(STAMP)
	MNEMO_E2E_SECURE=1 $(PY) -m pytest tests/e2e $(ARGS)

## Unit and component tests only: no server, about a minute.
test-fast: $(STAMP)
	$(PY) -m pytest tests/unit tests/ingest tests/embedding tests/summarizer tests/memory_extractor \
		tests/context_assembler tests/lore tests/memory tests/gateway $(ARGS)

## The memory API's isolation property at 10 times its CI size (tests/e2e/test_memory_isolation_property.py).
memory-leaks: $(STAMP)
	MNEMO_MEMORY_LEAK_SCALE=10 $(PY) -m pytest tests/e2e/test_memory_isolation_property.py -s --timeout=0 $(ARGS)

## Bad input at scale: 100,000 Hypothesis cases per test at every public subject (tests/integration/test_bad_input.py).
fuzz: $(STAMP)
	MNEMO_FUZZ_EXAMPLES=100000 $(PY) -m pytest tests/integration/test_bad_input.py --timeout=0 $(ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy mnemo clients/python/mnemo_client bench

fmt: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

## FastStream's AsyncAPI document of the public contract, written to asyncapi.json.
asyncapi: $(STAMP)
	$(VENV)/bin/mnemo asyncapi --out asyncapi.json

## The settings reference, docs/settings.md, the metric table of docs/operations.md, every file generated from the
## contract registry (contracts/, the Python client's models, the JavaScript client's types, the README's contract
## table) and the chart's consumers and NATS users (deploy/helm/mnemo/files/); tests fail when one is stale.
docs: $(STAMP)
	$(VENV)/bin/mnemo settings-doc --out docs/settings.md
	$(VENV)/bin/mnemo metrics-doc --out docs/operations.md
	$(PY) -m mnemo.runtime.consumer_lag
	$(VENV)/bin/mnemo nats-config --out deploy/helm/mnemo/files/nats-auth.conf
	$(VENV)/bin/mnemo contract-doc
	cd clients/js && npm run --silent generate

## The regression guard: context, lore, ingest and embedding at a reduced size, each ratio against its same-run
## reference (a few minutes; bench/quick.py). Run it before and after a change to a hot path.
bench-quick: $(STAMP)
	$(PY) -m bench.quick $(ARGS)

bench-ingest: $(STAMP)
	$(PY) -m bench.ingest $(ARGS)

bench-embedding: $(STAMP)
	$(PY) -m bench.embedding $(ARGS)

## The log consumers' CPU per event of a chat's log (messages, witnessings, two 1.6 MB lorebook imports) beside decoding every event.
bench-log-consumers: $(STAMP)
	$(PY) -m bench.log_consumers $(ARGS)

bench-lore: $(STAMP)
	$(PY) -m bench.lore $(ARGS)

## Retrieval recall, bare and within 500-4,000 tokens, on a LoCoMo-family file or folder (default: the REALTALK dev set beside the repo; quick: ARGS="--limit-chats 2").
bench-retrieval: $(STAMP)
	$(PY) -m bench.retrieval --data $(DATA) $(ARGS)

## Recall@10 on zh/ja/ko/ru chats with known evidence (bench/multilingual_data.py) beside BM25 and dense, per script.
bench-multilingual: $(STAMP)
	$(PY) -m bench.multilingual $(ARGS)

## Context request latency with 100,000 indexed items and a 400-entry lorebook (quick: ARGS="--items 20000").
bench-context: $(STAMP)
	$(PY) -m bench.context $(ARGS)

## What the metrics calls cost on the hot paths (CPU per call) beside a function call and a JSON parse, same run.
bench-observe: $(STAMP)
	$(PY) -m bench.observe $(ARGS)

## Ingest at 1 and 2 replicas on `mnemo cluster` beside one process, same run: msgs/s, CPU per message, duplicates.
bench-scale: $(STAMP)
	$(PY) -m bench.scale $(ARGS)

## What acking each message costs three replicating NATS nodes, beside one ack per batch and none, same run.
bench-cluster-acks: $(STAMP)
	$(PY) -m bench.cluster_acks $(ARGS)

## CPU per message of every pipeline stage, each its own process on `mnemo cluster`, and per context request;
## ratios to ingest's in the same run (docs/scaling.md). Quick: ARGS="-n 500 --requests 50".
bench-pipeline: $(STAMP)
	$(PY) -m bench.pipeline_cpu $(ARGS)

## Faults under load on `mnemo cluster` (kill -9 each service's replica, a NATS node, SecantusDB for 10 s), then
## lost / duplicated / out-of-order messages and the share of context requests answered; one JSON line.
## The default topology; CI runs ARGS=--quick (tests/integration/test_chaos.py).
chaos: $(STAMP)
	$(PY) -m bench.chaos $(ARGS)

## Documents as lore: a 363-page public-domain book as PDF and text, pages/s and embedded chunks/s beside the raw model.
bench-documents: $(STAMP)
	$(PY) -m bench.documents $(ARGS)

## memory.search over 100,000 memories of one tenant among 300,000, p50/p95 beside a bare hybrid query (same run).
bench-memory-search: $(STAMP)
	$(PY) -m bench.memory_search $(ARGS)

## Distributed mode (needs a Docker engine).
up:
	docker compose up -d --build

down:
	docker compose down

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
