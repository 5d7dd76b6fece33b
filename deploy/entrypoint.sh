#!/bin/sh
# The one entry point of the three Dagster services: docker-compose.yml runs it (the Dockerfile's
# ENTRYPOINT) and so does the deployment rehearsal test, so their commands cannot drift apart.
#
#   entrypoint.sh code-server | daemon | webserver          start that service (exec, PID 1)
#   entrypoint.sh check code-server | daemon | webserver    its health check (exit 0 = healthy)
#   entrypoint.sh dagster… ARGS                             run that Dagster command as given
#
# The last form is how Dagster's Helm chart and its Kubernetes run launcher use the image: they pass
# `dagster api grpc …` (the user-code deployment) and `dagster api execute_run …` (each run's pod) as
# the container's arguments, with their own instance configuration (deploy/helm/values.yaml).
#
# Every value comes from the environment (docker-compose.yml sets them); a missing one stops the
# service at once with the variable's name. $DAGSTER_HOME holds the production dagster.yaml.
set -eu

here="$(cd "$(dirname "$0")" && pwd)"
workspace="$here/workspace.yaml"

# The daemon's pid, written when it starts (container-local in compose; the rehearsal's own home).
daemon_pid="${DAGSTER_HOME:-.}/daemon.pid"
# How old the newest heartbeat of each daemon thread may be before `check daemon` fails.
DAEMON_HEARTBEAT_MAX_AGE_S=60

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
  echo "usage: $0 [check] code-server|daemon|webserver, or $0 dagster… ARGS" >&2
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
      # exec keeps this pid: `check daemon` reads it to tell a dead daemon at once.
      echo $$ > "$daemon_pid"
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
      # Dead: its process is gone (fails at once). Hung: one of its threads (scheduler, sensors,
      # backfills, run queue, monitoring, run retries) has not heartbeated into the instance for
      # DAEMON_HEARTBEAT_MAX_AGE_S (they heartbeat every 30 s). Dagster's own liveness check alone
      # tolerates 30 minutes of silence: a daemon killed a moment ago would still pass.
      pid="$(cat "$daemon_pid" 2>/dev/null || true)"
      if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
        echo "entrypoint.sh: the daemon process (pid ${pid:-unknown}, $daemon_pid) is not running" >&2
        exit 1
      fi
      DAGSTER_DAEMON_HEARTBEAT_TOLERANCE=$((DAEMON_HEARTBEAT_MAX_AGE_S - 30)) exec dagster-daemon liveness-check
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
  dagster|dagster-*) exec "$@" ;;
  *) usage ;;
esac
