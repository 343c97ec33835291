#!/usr/bin/env bash
# A real multi-node Ray cluster on this machine, loopback only.
#
#   scripts/cluster.sh up N [PORT]   head + N-1 worker nodes on 127.0.0.1:PORT (default 6390)
#   scripts/cluster.sh status        which nodes are alive
#   scripts/cluster.sh kill I        kill node I hard (its raylet and every actor on it: a rack failure)
#   scripts/cluster.sh down          stop every node this script started (and only those)
#
# Each node is its own `ray start --block` process (in its own process group)
# with its own resources
# (1 CPU and a custom resource "node-<i>"); the script keeps their PIDs in
# $SCHEDLAB_CLUSTER_DIR (default ./.schedlab-cluster), so `down` and `kill`
# never touch Ray processes it did not start (unlike `ray stop`).
# Then: schedlab run SCENARIO --address 127.0.0.1:PORT
set -euo pipefail

DIR="${SCHEDLAB_CLUSTER_DIR:-.schedlab-cluster}"
PY="${PYTHON:-python3}"
# Ray 2.60 starts a head with token authentication (the token in
# ~/.ray/auth_token, made if missing) but a joining node or driver only sends
# it when told to: tell every process this script starts.
export RAY_AUTH_MODE="${RAY_AUTH_MODE:-token}"
# A node told to stop (down) stops now: Ray 2.60 otherwise drains it first,
# for up to 30 s (for Serve's proxies, which an emulation has none of).
export RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S="${RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S:-0}"

die() { echo "error: $*" >&2; exit 2; }

alive() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

nodes_alive() {  # count of alive Ray nodes at 127.0.0.1:$1
  "$PY" - "$1" <<'PYEOF' 2>/dev/null || echo 0
import sys, ray
ray.init(address=f"127.0.0.1:{sys.argv[1]}", logging_level="ERROR", log_to_driver=False)
print(sum(1 for n in ray.nodes() if n["Alive"]))
PYEOF
}

up() {
  local n="${1:-}" port="${2:-6390}"
  [[ "$n" =~ ^[0-9]+$ && "$n" -ge 1 ]] || die "usage: cluster.sh up N [PORT] (N >= 1 nodes)"
  [[ "$port" =~ ^[0-9]+$ ]] || die "PORT must be a number (got '$port')"
  mkdir -p "$DIR"
  for f in "$DIR"/node-*.pid; do
    if alive "$f"; then die "a cluster started from $DIR is still up (scripts/cluster.sh down first)"; fi
  done
  rm -f "$DIR"/node-*.pid "$DIR"/node-*.log "$DIR"/port
  if "$PY" -c "import socket,sys; s=socket.socket(); sys.exit(0 if s.connect_ex(('127.0.0.1', $port)) else 1)"; then :; else
    die "port $port on 127.0.0.1 is already in use"
  fi
  echo "$port" > "$DIR/port"
  setsid ray start --head --node-ip-address=127.0.0.1 --port="$port" --num-cpus=1 \
    --resources='{"node-0": 1}' --include-dashboard=false --block >"$DIR/node-0.log" 2>&1 &
  echo $! > "$DIR/node-0.pid"
  for _ in $(seq 1 120); do
    "$PY" -c "import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(('127.0.0.1', $port)))" && break
    alive "$DIR/node-0.pid" || die "the head node did not start (see $DIR/node-0.log)"
    sleep 0.5
  done
  for i in $(seq 1 $((n - 1))); do
    setsid ray start --address="127.0.0.1:$port" --node-ip-address=127.0.0.1 --num-cpus=1 \
      --resources="{\"node-$i\": 1}" --block >"$DIR/node-$i.log" 2>&1 &
    echo $! > "$DIR/node-$i.pid"
  done
  for _ in $(seq 1 120); do
    [[ "$(nodes_alive "$port")" == "$n" ]] && { echo "cluster up: $n nodes at 127.0.0.1:$port"; return 0; }
    sleep 1
  done
  down >/dev/null
  die "the cluster did not reach $n nodes within 120 s (see $DIR/node-*.log)"
}

kill_node() {
  # A hard failure: SIGKILL to the node's whole process group (its raylet,
  # object store and every worker and actor on it), no draining.
  local i="${1:-}"
  [[ "$i" =~ ^[0-9]+$ ]] || die "usage: cluster.sh kill I"
  alive "$DIR/node-$i.pid" || die "node $i is not running (from $DIR)"
  kill -KILL -- "-$(cat "$DIR/node-$i.pid")" 2>/dev/null || kill -KILL "$(cat "$DIR/node-$i.pid")"
  for _ in $(seq 1 60); do alive "$DIR/node-$i.pid" || { echo "node $i killed"; return 0; }; sleep 0.5; done
  die "node $i did not die"
}

forget_address() {
  # `ray start --head` records its address in Ray's temp dir (ray_current_cluster),
  # and a plain `ray.init()` later on this machine waits minutes for that dead
  # cluster. Remove the record if it is ours (schedlab itself never reads it).
  [[ -f "$DIR/port" ]] || return 0
  local file
  file="$("$PY" -c 'from ray._common.utils import get_ray_address_file; print(get_ray_address_file(None))' 2>/dev/null)" || return 0
  # Ray records the head's node address (the machine's own, not 127.0.0.1): match the port.
  [[ -f "$file" && "$(cat "$file")" == *":$(cat "$DIR/port")" ]] && rm -f "$file"
  return 0
}

down() {
  [[ -d "$DIR" ]] || { echo "no cluster state in $DIR"; return 0; }
  local pids=()
  for f in $(ls "$DIR"/node-*.pid 2>/dev/null | sort -r); do  # workers first, the head last
    alive "$f" && { kill -- "-$(cat "$f")" 2>/dev/null || kill "$(cat "$f")" 2>/dev/null || true; pids+=("$(cat "$f")"); }
  done
  for p in "${pids[@]}"; do
    for _ in $(seq 1 60); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
    kill -KILL -- "-$p" 2>/dev/null || true
  done
  forget_address
  rm -f "$DIR"/node-*.pid "$DIR"/port
  echo "cluster down"
}

status() {
  [[ -f "$DIR/port" ]] || { echo "no cluster started from $DIR"; return 0; }
  local port; port="$(cat "$DIR/port")"
  for f in $(ls "$DIR"/node-*.pid 2>/dev/null | sort); do
    local i; i="$(basename "$f" .pid)"
    if alive "$f"; then echo "$i up (pid $(cat "$f"))"; else echo "$i down"; fi
  done
  echo "address 127.0.0.1:$port"
}

case "${1:-}" in
  up) shift; up "$@" ;;
  down) down ;;
  kill) shift; kill_node "$@" ;;
  status) status ;;
  *) die "usage: cluster.sh up N [PORT] | status | kill I | down" ;;
esac
