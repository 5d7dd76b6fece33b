#!/bin/sh
# The one entry point of the Dagster services: docker-compose.yml runs it (the Dockerfile's
# ENTRYPOINT) and so does the deployment rehearsal test, so their commands cannot drift apart.
#
#   entrypoint.sh migrate                                   the one-shot upgrade step (below)
#   entrypoint.sh migrate-store                             its application part alone (Kubernetes:
#                                                           the chart's migrate job does Dagster's)
#   entrypoint.sh code-server | daemon | webserver | webserver-readonly
#                                                           start that service
#   entrypoint.sh check code-server | daemon | webserver | webserver-readonly
#                                                           its health check (exit 0 = healthy)
#   entrypoint.sh dagster… ARGS | python ARGS               run that command as given, Dagster's
#                                                           password read from its file first (an
#                                                           operator's `docker compose run --rm
#                                                           user_code python -m social_recording …`)
#
# The last form is how Dagster's Helm chart and its Kubernetes run launcher use the image: they pass
# `dagster api grpc …` (the user-code deployment) and `dagster api execute_run …` (each run's pod) as
# the container's arguments, with their own instance configuration (deploy/helm/values.yaml).
#
# Every value comes from the environment (docker-compose.yml sets them); a missing one stops the
# service at once with the variable's name. $DAGSTER_HOME holds the production dagster.yaml.
# Dagster reads its PostgreSQL password from the environment only: given as
# DAGSTER_POSTGRES_PASSWORD_FILE (compose `secrets:`), it is read here into this process's own
# environment, never the container's configuration (docs/operations.md, "Secrets").
set -eu

here="$(cd "$(dirname "$0")" && pwd)"
workspace="$here/workspace.yaml"

: "${DAGSTER_HOME:?DAGSTER_HOME must name the directory holding deploy/dagster.yaml}"

# Files of the running services (a tmpfs in compose, whose root filesystem is read-only).
run_dir="$DAGSTER_HOME/run"
# The daemon's pid, written when it starts: `check daemon` reads it to tell a dead daemon at once,
# and to end a hung one.
daemon_pid="$run_dir/daemon.pid"
# Dagster's own default heartbeat tolerance is 30 minutes; compose and the Helm values set 120 s.
DAEMON_HEARTBEAT_TOLERANCE_S="${DAGSTER_DAEMON_HEARTBEAT_TOLERANCE:-120}"
# How often each daemon thread heartbeats (Dagster's DEFAULT_HEARTBEAT_INTERVAL_SECONDS).
DAEMON_HEARTBEAT_INTERVAL_S=30

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

from_file() {
  # from_file VAR: when VAR_FILE is set, export VAR with the file's content (its name in the error).
  eval "path=\${${1}_FILE:-}"
  [ -n "$path" ] || return 0
  if [ ! -r "$path" ] || [ ! -f "$path" ]; then
    echo "entrypoint.sh: ${1}_FILE: cannot read $path" >&2
    exit 64
  fi
  eval "$1=\$(cat \"\$path\")"
  export "${1?}"
}

usage() {
  echo "usage: $0 migrate|migrate-store, $0 [check] code-server|daemon|webserver|webserver-readonly, or $0 dagster…|python ARGS" >&2
  exit 64
}

serve() {
  # serve COMMAND…: the service becomes this process (exec), the one a stop's SIGTERM reaches (Docker's
  # init and Kubernetes signal the container's main process), with SIGINT and SIGTERM at their
  # defaults: a shell that starts this script in the background (`sh -c '… &'`) makes it ignore
  # SIGINT, and Dagster's services then ignore SIGTERM too (they map it to SIGINT's disposition).
  exec env --default-signal=INT,TERM "$@"
}

start() {
  case "$1" in
    migrate)
      # Before the code server, the daemon and the webservers start (compose: they depend on its
      # successful completion; Helm: the chart's migrate job): Dagster's instance schema, then the
      # application's MongoDB user (created, or its password set to the store URL's), then the
      # store's own migrations, as that user.
      from_file DAGSTER_POSTGRES_PASSWORD
      dagster instance migrate
      start migrate-store
      ;;
    migrate-store)
      python -m social_recording.store.mongo_app_user
      exec python -m social_recording migrate
      ;;
    code-server)
      # The only process that imports social_recording: it serves the definitions over gRPC,
      # evaluates schedules and sensors, and starts each run as a child process.
      need SOCIAL_RECORDING_LISTEN_HOST SOCIAL_RECORDING_CODE_SERVER_PORT
      # A stop (SIGTERM) makes it take no new run and terminate the runs in flight: each starts no
      # new token, finishes and writes the ones in flight and ends CANCELED; it exits once they have
      # ended, within the stop grace period (docker-compose.yml; social_recording/code_server_stop.py).
      # Its run processes are forked from one that has imported Dagster and the code location
      # already (social_recording/code_server.py): a run starts in a fraction of a second.
      from_file DAGSTER_POSTGRES_PASSWORD
      serve python -m social_recording.code_server api grpc \
        --host "$SOCIAL_RECORDING_LISTEN_HOST" --port "$SOCIAL_RECORDING_CODE_SERVER_PORT" \
        --module-name social_recording.definitions --location-name social_recording
      ;;
    daemon)
      # Schedules, sensors, backfills and the run queue; reaches the code server via workspace.yaml.
      need SOCIAL_RECORDING_CODE_SERVER_HOST SOCIAL_RECORDING_CODE_SERVER_PORT
      from_file DAGSTER_POSTGRES_PASSWORD
      mkdir -p "$run_dir"
      # exec (serve) keeps this pid: `check daemon` reads it.
      echo $$ > "$daemon_pid"
      serve dagster-daemon run --workspace "$workspace"
      ;;
    webserver|webserver-readonly)
      # The operators' webserver, or the viewers' (--read-only: no launch, no termination, no
      # schedule or sensor switch); both behind the authenticating proxy (deploy/proxy).
      need SOCIAL_RECORDING_CODE_SERVER_HOST SOCIAL_RECORDING_CODE_SERVER_PORT \
        SOCIAL_RECORDING_LISTEN_HOST SOCIAL_RECORDING_WEBSERVER_PORT
      from_file DAGSTER_POSTGRES_PASSWORD
      read_only=""
      [ "$1" = webserver-readonly ] && read_only="--read-only"
      serve dagster-webserver --workspace "$workspace" $read_only \
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
      # backfills, run queue, monitoring, run retries) has not heartbeated into the instance for its
      # interval (30 s) plus DAGSTER_DAEMON_HEARTBEAT_TOLERANCE. Dagster's daemon only warns about
      # that, and compose restarts a container only when it exits: so the check ends the hung
      # daemon (SIGKILL: a stopped process ignores anything else) and the restart policy replaces
      # it. Kubernetes' liveness probe does the same with the chart's heartbeatTolerance.
      pid="$(cat "$daemon_pid" 2>/dev/null || true)"
      if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
        echo "entrypoint.sh: the daemon process (pid ${pid:-unknown}, $daemon_pid) is not running" >&2
        exit 1
      fi
      from_file DAGSTER_POSTGRES_PASSWORD
      if ! DAGSTER_DAEMON_HEARTBEAT_TOLERANCE="$DAEMON_HEARTBEAT_TOLERANCE_S" dagster-daemon liveness-check; then
        # Only a daemon that has had the time to heartbeat: a new one (its pid file as old as it)
        # may still be reading the workspace, and the heartbeats in the instance are its predecessor's.
        age=$(( $(date +%s) - $(stat -c %Y "$daemon_pid") ))
        if [ "$age" -gt $((DAEMON_HEARTBEAT_INTERVAL_S + DAEMON_HEARTBEAT_TOLERANCE_S)) ]; then
          echo "entrypoint.sh: the daemon (pid $pid, up ${age} s) has not heartbeated for ${DAEMON_HEARTBEAT_INTERVAL_S} + ${DAEMON_HEARTBEAT_TOLERANCE_S} s: ending it so that it is restarted" >&2
          kill -KILL "$pid" 2>/dev/null || true
        fi
        exit 1
      fi
      ;;
    webserver|webserver-readonly)
      need SOCIAL_RECORDING_WEBSERVER_PORT
      exec python -c 'import sys, urllib.request; urllib.request.urlopen("http://127.0.0.1:" + sys.argv[1] + "/server_info", timeout=5)' \
        "$SOCIAL_RECORDING_WEBSERVER_PORT"
      ;;
    *) usage ;;
  esac
}

case "${1:-}" in
  check) [ $# -eq 2 ] || usage; check "$2" ;;
  migrate|migrate-store|code-server|daemon|webserver|webserver-readonly) [ $# -eq 1 ] || usage; start "$1" ;;
  dagster|dagster-*|python) from_file DAGSTER_POSTGRES_PASSWORD; serve "$@" ;;
  *) usage ;;
esac
