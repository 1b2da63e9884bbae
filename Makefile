# Two commands do all set-up on a fresh machine (see README):
#   make demo   install, build the Weaviate server once, index demo/corpus, answer a question
#   make test   install, build the Weaviate server once, run the whole test suite
#   make image-test   build the container image, run it, ask it one question (podman; README "Deploy with containers")
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: install weaviate demo test bench image-test
install: $(VENV)/.installed

$(VENV)/.installed: requirements.lock pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r requirements.lock
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $@

weaviate: install
	$(BIN)/verbatim weaviate install

demo: weaviate
	$(BIN)/verbatim ingest demo/corpus
	$(BIN)/verbatim ask "How long do I have to request a refund for an annual plan?"
	$(BIN)/verbatim ask "Когда обращение передаётся на вторую линию?"

test: weaviate
	scripts/test.sh

image-test:
	scripts/image-test.sh

bench: weaviate
	$(BIN)/python -m bench.retrieval
	$(BIN)/python -m bench.answers
	$(BIN)/python -m bench.slack
	$(BIN)/python -m bench.faults
