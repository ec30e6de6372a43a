#!/usr/bin/env bash
# CI step: render and validate the deployment files.
#   compose: docker-compose config with deploy/.env.example, then content checks;
#   helm:    helm lint + helm template for the default values and deploy/helm/values/*.yaml,
#            each validated with kubeconform against kubernetes-validate's offline schemas.
# The tools come from scripts/install.sh --test (docker-compose from Debian, helm and
# kubeconform with go install at pinned tags). Details: scripts/check_deploy.py --help.
set -euo pipefail
cd "$(dirname "$0")/.."
gobin="$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin"
# PYTHON: the interpreter coderag was installed into (default python3, as in .ci/run).
PATH="$PATH:$gobin" "${PYTHON:-python3}" scripts/check_deploy.py "$@"
