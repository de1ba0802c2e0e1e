#!/usr/bin/env bash
# Wait (up to 120 s) until ZooKeeper on 127.0.0.1:PORT serves requests, then exec the command.
# Usage: scripts/await-zookeeper.sh PORT COMMAND...   (used by `make run` to order start-up:
# a broker gives up if ZooKeeper stays unreachable for its connection timeout).
set -euo pipefail
port=$1
shift
for _ in $(seq 1 240); do
  # The braces matter: a bare `exec 3<>… 2>/dev/null` would redirect this shell's stderr,
  # and so the exec'd command's (the broker's log lines), to /dev/null for good.
  if { exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null; then
    printf 'srvr' >&3
    if timeout 2 cat <&3 | grep -q "Mode:"; then
      exec 3>&-
      exec "$@"
    fi
    exec 3>&-
  fi
  sleep 0.5
done
echo "ZooKeeper on port $port did not answer within 120 s" >&2
exit 1
