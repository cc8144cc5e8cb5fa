# The oper8d operator image: `oper8d run /bundle` with a bundle baked in at /bundle.
#
#   docker build -t oper8d .                                   # the webapp example bundle
#   docker build -t my-operator --build-arg BUNDLE=path/to/bundle .
#
# Another bundle can also be mounted over /bundle at run time (a ConfigMap volume). Needs
# BuildKit (the default builder since Docker 23) for the RUN --mount below.
# tests/unit/test_dockerfile.py runs this file's pip steps in a fresh virtual environment.

ARG PYTHON_IMAGE=python:3.11-slim

# -- builder: a wheel of oper8d and of every dependency ------------------------------------
FROM ${PYTHON_IMAGE} AS builder

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

WORKDIR /src
# only what the wheel is built from: the source, its metadata and the bundle schemas
# (oper8d/schemas is a symlink to ../schemas, which COPY keeps as a symlink)
COPY pyproject.toml README.md ./
COPY schemas/ schemas/
COPY oper8d/ oper8d/
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

# -- the image -----------------------------------------------------------------------------
FROM ${PYTHON_IMAGE}

ARG PYTHON_IMAGE
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG BUNDLE=examples/operators/webapp

LABEL org.opencontainers.image.title="oper8d" \
      org.opencontainers.image.description="Declarative Kubernetes operators: YAML bundles run by a generic reconcile engine" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.base.name="${PYTHON_IMAGE}"

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

# the wheels come through a bind mount, so no layer keeps them; --no-index: exactly the
# versions the builder resolved, nothing fetched here
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index --find-links=/wheels /wheels/oper8d-*.whl

# 65532: the conventional "nonroot" id, so runAsNonRoot and restricted Pod Security accept it
RUN groupadd --system --gid 65532 oper8d \
    && useradd --system --no-log-init --uid 65532 --gid 65532 --no-create-home \
       --home-dir /nonexistent --shell /usr/sbin/nologin oper8d

COPY ${BUNDLE} /bundle

USER 65532:65532

# metrics (--metrics-bind-address) and health probes (--health-probe-bind-address)
EXPOSE 8080 8081

ENTRYPOINT ["oper8d"]
CMD ["run", "/bundle"]
