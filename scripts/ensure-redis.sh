#!/usr/bin/env bash
# Makes sure a Redis answers at 127.0.0.1:6379 and that redis-server and
# redis-cli are installed (the tests also start throwaway servers and a
# three-node cluster from the binary). Installs Debian's redis-server if
# missing, starts it if not running.
set -euo pipefail

if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
  echo "ensure-redis: installing redis-server from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq redis-server redis-tools >/dev/null
fi

if redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; then
  echo "ensure-redis: Redis answers at 127.0.0.1:6379 ($(redis-server --version | awk '{print $3}'))"
  exit 0
fi

echo "ensure-redis: starting redis-server on 127.0.0.1:6379"
dir=$(mktemp -d)
redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
  --dir "$dir" --logfile "$dir/redis.log"
for _ in $(seq 1 50); do
  if redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; then
    echo "ensure-redis: Redis is up"
    exit 0
  fi
  sleep 0.1
done
echo "ensure-redis: Redis did not answer; log follows" >&2
cat "$dir/redis.log" >&2 || true
exit 1
