#!/usr/bin/env bash
# Install coderag and what it needs on a fresh machine:
#   - the Python package (editable) with its dependencies; add --test for the test extras;
#   - the weaviate-server binary, built with `go install` at the pinned tag, only when it
#     is not already on PATH, in $WEAVIATE_BINARY or in $(go env GOPATH)/bin (slow: minutes);
#   - with --test, PostgreSQL from Debian packages when absent (scripts/start_postgres.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

WEAVIATE_VERSION="v1.39.0"   # keep in step with indexer/store/weaviate_server.py
extras=""
for arg in "$@"; do
  case "$arg" in
    --test) extras="[test]" ;;
    *) echo "usage: scripts/install.sh [--test]" >&2; exit 2 ;;
  esac
done

python3 -m pip install --quiet --disable-pip-version-check -e ".${extras}"

if [ -n "$extras" ] && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  echo "postgresql: installing from Debian packages (for the SQL tests)..."
  if [ "$(id -u)" = "0" ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql
  else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; fi
fi

gobin="$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin"
if [ -n "${WEAVIATE_BINARY:-}" ] && [ -x "${WEAVIATE_BINARY}" ]; then
  echo "weaviate-server: using WEAVIATE_BINARY=${WEAVIATE_BINARY}"
elif command -v weaviate-server >/dev/null 2>&1; then
  echo "weaviate-server: found $(command -v weaviate-server)"
elif [ -x "$gobin/weaviate-server" ]; then
  echo "weaviate-server: found $gobin/weaviate-server"
else
  command -v go >/dev/null 2>&1 || { echo "error: Go is needed to build weaviate-server" >&2; exit 1; }
  echo "weaviate-server: building ${WEAVIATE_VERSION} with go install (takes several minutes)..."
  go install "github.com/weaviate/weaviate/cmd/weaviate-server@${WEAVIATE_VERSION}"
  echo "weaviate-server: installed $gobin/weaviate-server"
fi
