# specdec-lab: two commands. `make run` sets up and starts the app; `make test` sets up and tests.
# Both create .venv on first use and do nothing on a second run that they did on the first.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PORT   ?= 8501

.PHONY: run test install install-dev chromium bench clean

run: $(VENV)/.run-installed
	$(PY) -m streamlit run app.py --server.port $(PORT)

test: $(VENV)/.dev-installed chromium
	$(PY) -m pytest

install: $(VENV)/.run-installed
install-dev: $(VENV)/.dev-installed

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.run-installed: requirements.txt | $(PY)
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.dev-installed: requirements.txt requirements-dev.txt | $(PY)
	$(PY) -m pip install --quiet -r requirements-dev.txt
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

clean:
	rm -rf $(VENV) artifacts .pytest_cache .hypothesis
