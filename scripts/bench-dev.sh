#!/usr/bin/env bash
# Measures `ontoflow dev` on this machine: build time (warm; cold with
# --cold, which compiles everything in a fresh GOCACHE, ~10 min), binary
# size, time from exec to /readyz answering 200 on a fresh data directory
# and on an existing one, and idle RSS. Prints a Markdown table.
#
#   scripts/bench-dev.sh [--cold] [--runs N]
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
cold=0 runs=5
while [ $# -gt 0 ]; do
  case "$1" in
    --cold) cold=1 ;;
    --runs) runs=$2; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

now_ms() { date +%s%3N; }
bin=bin/ontoflow
mkdir -p bin

if [ $cold = 1 ]; then
  cache=$(mktemp -d)
  t0=$(now_ms)
  GOCACHE=$cache CGO_ENABLED=0 go build -o $bin ./cmd/ontoflow
  cold_ms=$(( $(now_ms) - t0 ))
  rm -rf "$cache"
fi
CGO_ENABLED=0 go build -o $bin ./cmd/ontoflow
# A new -X value changes the link inputs: this measures the relink every
# edit costs (editing a package recompiles that package on top).
t0=$(now_ms)
CGO_ENABLED=0 go build -ldflags "-X main.benchStamp=$(date +%s%N)" -o $bin ./cmd/ontoflow
warm_ms=$(( $(now_ms) - t0 ))
size=$(stat -c %s $bin)

port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
url=http://127.0.0.1:$port/readyz

# start DIR -> prints "ms pid": time until /readyz is 200, and the pid
start() {
  local t0; t0=$(now_ms)
  ONTOFLOW_ADMIN_PASSWORD=bench-password-1 $bin dev --data-dir "$1" --http-addr 127.0.0.1:$port \
    --temporal-port 0 --ui-port 0 --log-level error >/dev/null 2>&1 &
  pid=$!
  until curl -fsS -o /dev/null "$url" 2>/dev/null; do
    kill -0 $pid 2>/dev/null || { echo "ontoflow dev exited" >&2; exit 1; }
    sleep 0.02
  done
  echo "$(( $(now_ms) - t0 )) $pid"
}
# stop PID: SIGTERM, then wait until it is gone
stop() { kill -TERM "$1"; while kill -0 "$1" 2>/dev/null; do sleep 0.05; done; }

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

fresh=() again=()
for i in $(seq "$runs"); do
  dir=$(mktemp -d)
  read -r ms pid <<<"$(start "$dir")"; fresh+=("$ms"); stop "$pid"
  read -r ms pid <<<"$(start "$dir")"; again+=("$ms"); stop "$pid"
  rm -rf "$dir"
done

dir=$(mktemp -d)
read -r ms pid <<<"$(start "$dir")"
sleep 30
rss_kib=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
cpu_before=$(awk '{print $14+$15}' /proc/$pid/stat); sleep 10; cpu_after=$(awk '{print $14+$15}' /proc/$pid/stat)
stop "$pid"
rm -rf "$dir"
idle_cpu=$(awk -v d=$((cpu_after - cpu_before)) -v hz=$(getconf CLK_TCK) 'BEGIN {printf "%.1f", 100*d/hz/10}')

echo "| figure | value |"
echo "|---|---|"
[ $cold = 1 ] && echo "| cold build (fresh GOCACHE, \`go build ./cmd/ontoflow\`) | $((cold_ms / 1000)) s |"
echo "| rebuild, warm cache (relink) | $((warm_ms / 1000)).$(( (warm_ms % 1000) / 100 )) s |"
echo "| binary size | $((size / 1024 / 1024)) MiB |"
echo "| start to ready, fresh data dir (median of $runs) | $(printf '%s\n' "${fresh[@]}" | median) ms (runs: ${fresh[*]}) |"
echo "| start to ready, existing data dir (median of $runs) | $(printf '%s\n' "${again[@]}" | median) ms (runs: ${again[*]}) |"
echo "| idle RSS after 30 s | $((rss_kib / 1024)) MiB |"
echo "| idle CPU over 10 s | ${idle_cpu}% of one core |"
