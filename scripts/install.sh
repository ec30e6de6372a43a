#!/usr/bin/env bash
# Install coderag and what it needs on a fresh machine:
#   - the Python package (editable) with its dependencies; add --test for the test extras;
#   - the weaviate-server binary, built with `go install` at the pinned tag, only when it
#     is not already on PATH, in $WEAVIATE_BINARY or in $(go env GOPATH)/bin (slow: minutes);
#   - with --test, PostgreSQL from Debian packages when absent (scripts/start_postgres.sh);
#   - with --test, Chromium from Debian packages when absent (the admin page's browser tests);
#   - with --test, the deployment checkers of scripts/check_deploy.sh when absent:
#     docker-compose (Debian package), helm and kubeconform (go install at the pinned tags).
set -euo pipefail
cd "$(dirname "$0")/.."

WEAVIATE_VERSION="v1.39.0"   # keep in step with indexer/store/weaviate_server.py
HELM_VERSION="v3.21.4"        # scripts/check_deploy.sh: helm lint / helm template
KUBECONFORM_VERSION="v0.7.0"  # scripts/check_deploy.sh: manifests against the Kubernetes schemas
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

# Chromium for the browser tests of /admin (tests/e2e/test_admin_browser.py), from Debian packages, only
# for --test and only when missing; Playwright drives it (executable_path), its own download is not used.
if [ -n "$extras" ] && ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  echo "chromium: installing from Debian packages (browser tests of the admin page)..."
  if [ "$(id -u)" = "0" ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
  else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; fi
fi

# Deployment checkers (scripts/check_deploy.sh), only for --test and only when missing.
if [ -n "$extras" ]; then
  if ! command -v docker-compose >/dev/null 2>&1; then
    echo "docker-compose: installing from Debian packages (renders deploy/docker-compose.yml)..."
    if [ "$(id -u)" = "0" ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose
    else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose; fi
  fi
  for pair in "helm helm.sh/helm/v3/cmd/helm@${HELM_VERSION}" \
              "kubeconform github.com/yannh/kubeconform/cmd/kubeconform@${KUBECONFORM_VERSION}"; do
    set -- $pair
    if command -v "$1" >/dev/null 2>&1 || [ -x "$gobin/$1" ]; then
      echo "$1: found $(command -v "$1" || echo "$gobin/$1")"
    else
      command -v go >/dev/null 2>&1 || { echo "error: Go is needed to build $1" >&2; exit 1; }
      echo "$1: building with go install $2 (takes minutes)..."
      go install "$2"
      echo "$1: installed $gobin/$1"
    fi
  done
fi
