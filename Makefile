# Two commands do all set-up on a fresh machine (see README):
#   make demo   install, build the Weaviate server once, index demo/corpus, answer a question
#   make test   install, build the Weaviate server once, run the whole test suite
#   make image-test   build the container image, run it, ask it one question (podman; README "Deploy with containers")
#   make train  rebuild the answer judge from ../shared, then set its threshold (bench.answers)
#   make lock   re-resolve the three locks from pyproject.toml (needs uv) and regenerate requirements.txt
# Three hash-checked locks: requirements.lock (production: what an image or a buildpack installs),
# requirements-dev.lock (production plus pytest and setuptools) and requirements-train.lock (dev plus JAX and optax,
# which train the answer judge: what `make` installs here, so the tests can run a tiny training).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
UV ?= uv
COMPILE = $(UV) pip compile pyproject.toml --generate-hashes --universal --python-version 3.11

.PHONY: install weaviate demo test bench lock image-test train
install: $(VENV)/.installed

$(VENV)/.installed: requirements-train.lock pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r requirements-train.lock
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $@

lock:
	$(COMPILE) -o requirements.lock
	$(COMPILE) --extra dev -o requirements-dev.lock
	$(COMPILE) --extra dev --extra train -o requirements-train.lock
	$(MAKE) requirements.txt requirements-build.lock

# What builds the wheel in the Containerfile: requirements-dev.lock's setuptools, with its hashes.
requirements-build.lock: requirements-dev.lock
	{ echo "# What builds the verbatim wheel (pyproject's build-system), hash-checked: the setuptools pin of"; \
	  echo "# requirements-dev.lock, written by \`make lock\`. Used by the Containerfile; nothing at run time needs it."; \
	  awk '/^setuptools==/{p=1; print; next} p && /^    --hash/{print; next} {p=0}' requirements-dev.lock; } > $@

# For platforms that read requirements.txt (Python buildpacks): the production lock under another name.
requirements.txt: requirements.lock
	{ echo "# Generated from requirements.lock by \`make requirements.txt\`; do not edit. Production only, hash-checked:"; \
	  echo "#    pip install -r requirements.txt"; sed '1,2d' requirements.lock; } > $@

# The answer judge, rebuilt from ../shared (README "The answer judge"); bench.answers then sets its threshold.
train: weaviate
	$(BIN)/python -m train.judge
	$(BIN)/python -m bench.answers

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
