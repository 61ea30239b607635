# sla — the README's commands.
#   make          configure and build (build/)
#   make test     install missing Debian packages, build, run the suite,
#                 then run it again built with AddressSanitizer + UBSan
#   make run      the same set-up, then the main job
#   make bench    the benchmarks; results in bench/RESULTS.md
#   make install PREFIX=/some/where

PREFIX ?= /usr/local
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BUILD := build
ASAN_BUILD := build-asan
CMAKE_FLAGS ?=

.PHONY: all deps configure build test test-main test-asan run bench install clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

configure: $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: deps
	$(MAKE) test-main
	$(MAKE) test-asan

test-main: build
	cd $(BUILD) && ctest --output-on-failure -j 1

test-asan:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DSLA_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j 1

# The demo runs in $(BUILD)/, where it writes sla_demo_inverse.png; it draws
# the PNG with gnuplot: install gnuplot-nox if it is missing
# (as root or through sudo, like scripts/install-deps.sh); without it the
# demo runs and skips the picture with a note.
run: deps build
	@command -v gnuplot >/dev/null 2>&1 || { \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  echo "sla: installing gnuplot-nox for the demo's PNG"; \
	  { $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gnuplot-nox || \
	    { $$SUDO apt-get update -qq && \
	      $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gnuplot-nox; }; \
	  } >/dev/null 2>&1 || echo "sla: could not install gnuplot-nox; the demo will skip its PNG"; }
	cd $(BUILD) && ./bin/sla demo

bench: deps
	SLA_DEPS_BENCH=1 bash scripts/install-deps.sh
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DSLA_NATIVE=ON
	cmake --build $(BUILD) -j $(JOBS)
	bash bench/run_all.sh $(BUILD)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
