#!/usr/bin/env bash
# A real image registry on the loopback for `envkit build --push` tests: Debian's docker-registry
# (distribution 2.8), no auth, plain HTTP on 127.0.0.1 (which the Docker daemon trusts without TLS).
#
#   .ci/registry.sh start    install (apt) if needed, start, wait until /v2/ answers
#   .ci/registry.sh stop
#
# Address: $ENVKIT_REGISTRY (default 127.0.0.1:5000); storage and log in $ENVKIT_REGISTRY_DIR.
set -euo pipefail

ADDR=${ENVKIT_REGISTRY:-127.0.0.1:5000}
DIR=${ENVKIT_REGISTRY_DIR:-/tmp/envkit-registry}

answers() {
  python3 -c "import urllib.request; urllib.request.urlopen('http://$ADDR/v2/', timeout=2)" 2>/dev/null
}

start() {
  if ! command -v docker-registry >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends docker-registry >/dev/null
  fi
  if answers; then
    echo "registry: already answering on $ADDR"
    return
  fi
  mkdir -p "$DIR/data"
  cat >"$DIR/config.yml" <<CONF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $DIR/data
  delete:
    enabled: true
http:
  addr: $ADDR
CONF
  (setsid docker-registry serve "$DIR/config.yml" >"$DIR/registry.log" 2>&1 & echo $! >"$DIR/pid")
  for _ in $(seq 1 30); do answers && break; sleep 0.5; done
  if ! answers; then
    echo "registry did not answer on $ADDR; its log:" >&2
    tail -n 20 "$DIR/registry.log" >&2 || true
    exit 1
  fi
  echo "registry: answering on http://$ADDR/v2/"
}

stop() {
  if [ -f "$DIR/pid" ]; then kill "$(cat "$DIR/pid")" 2>/dev/null || true; rm -f "$DIR/pid"; fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start | stop" >&2; exit 2 ;;
esac
