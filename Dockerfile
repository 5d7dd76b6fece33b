# One image for the three Dagster services of docker-compose.yml: the gRPC code server (the only
# process that imports social_recording; runs start inside its container), the daemon and the
# webserver. They differ only by the argument to deploy/entrypoint.sh.
FROM python:3.11.13-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DAGSTER_HOME=/opt/dagster/home

RUN useradd --create-home --uid 1000 dagster

WORKDIR /opt/social_recording

# The production dependencies exactly as locked (`make lock`: pyproject.toml's dependencies with the
# `deploy` extra, every version pinned with its hashes), so two builds install the same files; then
# the project itself from the source, without resolving anything, and `pip check` that the lock
# satisfies everything the project declares. No dev tools, no tests.
COPY deploy/requirements.lock ./deploy/requirements.lock
RUN pip install --require-hashes --no-deps -r deploy/requirements.lock
COPY pyproject.toml README.md ./
COPY social_recording ./social_recording
RUN pip install --no-deps --no-build-isolation . && pip check

COPY deploy ./deploy

# The production instance config, and the directories the compose volumes and tmpfs mount (created
# here so that the named volumes start owned by the unprivileged user; the root filesystem is
# read-only in compose, see docker-compose.yml).
RUN mkdir -p "$DAGSTER_HOME/storage" "$DAGSTER_HOME/social_recording" "$DAGSTER_HOME/run" \
        "$DAGSTER_HOME/.nux" "$DAGSTER_HOME/.logs_queue" "$DAGSTER_HOME/.telemetry" \
    && cp deploy/dagster.yaml "$DAGSTER_HOME/dagster.yaml" \
    && chown -R dagster:dagster "$DAGSTER_HOME"

# The build's identity: the commit it was built from (`make image`; IMAGE_TAG in docker-compose.yml).
ARG REVISION=local
LABEL org.opencontainers.image.revision=$REVISION \
      org.opencontainers.image.source="social_recording"

USER dagster

EXPOSE 3000 4000

ENTRYPOINT ["/opt/social_recording/deploy/entrypoint.sh"]
