#!/usr/bin/env bash
# A throw-away PostgreSQL cluster for tests and benchmarks (never for production data).
#
#   eval "$(bash scripts/start_postgres.sh)"     # start; exports the variables below
#   bash scripts/start_postgres.sh --stop DIR     # stop the cluster in DIR and delete DIR
#
# Installs PostgreSQL from the Debian packages (apt-get install postgresql) only when no
# initdb is found. Creates a cluster in a new temp dir (or $1), owned by the `postgres`
# user when run as root (PostgreSQL refuses to run as root), listening on 127.0.0.1 on a
# free port with trust auth and its socket inside the data dir. Prints, for eval:
#   export CODERAG_TEST_POSTGRES_URL=postgresql+psycopg://postgres@127.0.0.1:PORT/postgres
#   export CODERAG_TEST_POSTGRES_DIR=DIR
set -euo pipefail

find_bin() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [ -x "$d/initdb" ] && { echo "$d"; return 0; }
  done
  if command -v initdb >/dev/null 2>&1; then dirname "$(command -v initdb)"; return 0; fi
  return 1
}

as_owner() {  # run a command as the cluster owner
  if [ "$(id -u)" = "0" ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi
}

if [ "${1:-}" = "--stop" ]; then
  dir="${2:?usage: start_postgres.sh --stop DIR}"
  bin="$(find_bin)"
  if [ -f "$dir/data/postmaster.pid" ]; then
    as_owner "'$bin/pg_ctl' -D '$dir/data' -m fast -w stop" >&2 || true
  fi
  rm -rf "$dir"
  exit 0
fi

if ! bin="$(find_bin)"; then
  echo "start_postgres: installing PostgreSQL from Debian packages..." >&2
  [ "$(id -u)" = "0" ] || { echo "start_postgres: need root to apt-get install postgresql" >&2; exit 1; }
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 && apt-get install -y -qq postgresql >&2
  bin="$(find_bin)" || { echo "start_postgres: initdb still not found" >&2; exit 1; }
fi

dir="${1:-$(mktemp -d /tmp/coderag-pg.XXXXXX)}"
mkdir -p "$dir"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
if [ "$(id -u)" = "0" ]; then
  id postgres >/dev/null 2>&1 || useradd --system --home-dir "$dir" --shell /bin/sh postgres
  chown postgres "$dir"
  chmod 755 "$dir"
fi
as_owner "'$bin/initdb' -D '$dir/data' -U postgres --auth=trust --encoding=UTF8 --no-locale" >"$dir/initdb.log" 2>&1 \
  || { cat "$dir/initdb.log" >&2; exit 1; }
as_owner "'$bin/pg_ctl' -D '$dir/data' -l '$dir/server.log' -w -t 60 \
  -o \"-h 127.0.0.1 -p $port -k '$dir/data'\" start" >&2 \
  || { cat "$dir/server.log" >&2; exit 1; }
echo "export CODERAG_TEST_POSTGRES_URL=postgresql+psycopg://postgres@127.0.0.1:$port/postgres"
echo "export CODERAG_TEST_POSTGRES_DIR=$dir"
