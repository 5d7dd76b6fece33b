#!/bin/sh
# The one entry point of the three Dagster services: docker-compose.yml runs it (the Dockerfile's
# ENTRYPOINT) and so does the deployment rehearsal test, so their commands cannot drift apart.
#
#   entrypoint.sh code-server | daemon | webserver          start that service (exec, PID 1)
#   entrypoint.sh check code-server | daemon | webserver    its health check (exit 0 = healthy)
#
# Every value comes from the environment (docker-compose.yml sets them); a missing one stops the
# service at once with the variable's name. $DAGSTER_HOME holds the production dagster.yaml.
set -eu

here="$(cd "$(dirname "$0")" && pwd)"
workspace="$here/workspace.yaml"

: "${DAGSTER_HOME:?DAGSTER_HOME must name the directory holding deploy/dagster.yaml}"

need() {
  # need VAR...: fail with the variable's name when one is unset or empty.
  for name in "$@"; do
    eval "value=\${$name:-}"
    if [ -z "$value" ]; then
      echo "entrypoint.sh: $name must be set" >&2
      exit 64
    fi
  done
}

usage() {
  echo "usage: $0 [check] code-server|daemon|webserver" >&2
  exit 64
}

start() {
  case "$1" in
    code-server)
      # The only process that imports social_recording: it serves the definitions over gRPC,
      # evaluates schedules and sensors, and starts each run as a child process.
      need SOCIAL_RECORDING_LISTEN_HOST SOCIAL_RECORDING_CODE_SERVER_PORT
      exec dagster api grpc \
        --host "$SOCIAL_RECORDING_LISTEN_HOST" --port "$SOCIAL_RECORDING_CODE_SERVER_PORT" \
        --module-name social_recording.definitions --location-name social_recording
      ;;
    daemon)
      # Schedules, sensors, backfills and the run queue; reaches the code server via workspace.yaml.
      need SOCIAL_RECORDING_CODE_SERVER_HOST SOCIAL_RECORDING_CODE_SERVER_PORT
      exec dagster-daemon run --workspace "$workspace"
      ;;
    webserver)
      need SOCIAL_RECORDING_CODE_SERVER_HOST SOCIAL_RECORDING_CODE_SERVER_PORT \
        SOCIAL_RECORDING_LISTEN_HOST SOCIAL_RECORDING_WEBSERVER_PORT
      exec dagster-webserver --workspace "$workspace" \
        --host "$SOCIAL_RECORDING_LISTEN_HOST" --port "$SOCIAL_RECORDING_WEBSERVER_PORT"
      ;;
    *) usage ;;
  esac
}

check() {
  case "$1" in
    code-server)
      need SOCIAL_RECORDING_CODE_SERVER_PORT
      exec dagster api grpc-health-check --host 127.0.0.1 --port "$SOCIAL_RECORDING_CODE_SERVER_PORT"
      ;;
    daemon)
      # Every daemon thread (scheduler, sensors, backfills, run queue, monitoring) heartbeats in
      # the instance's PostgreSQL; this fails when one of them stopped.
      exec dagster-daemon liveness-check
      ;;
    webserver)
      need SOCIAL_RECORDING_WEBSERVER_PORT
      exec python -c 'import sys, urllib.request; urllib.request.urlopen("http://127.0.0.1:" + sys.argv[1] + "/server_info", timeout=5)' \
        "$SOCIAL_RECORDING_WEBSERVER_PORT"
      ;;
    *) usage ;;
  esac
}

case "${1:-}" in
  check) [ $# -eq 2 ] || usage; check "$2" ;;
  code-server|daemon|webserver) [ $# -eq 1 ] || usage; start "$1" ;;
  *) usage ;;
esac
