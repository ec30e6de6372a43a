# Convenience targets (the tests themselves run with plain pytest).
PYTHON ?= python3

.PHONY: cluster-test tenancy-bench deploy-check

# 3 real weaviate-server processes as one Raft cluster on loopback; SIGKILL one node,
# keep answering, restart it and watch it catch up (~2 min). Prints the figures.
cluster-test:
	$(PYTHON) -m pytest tests/faults/test_cluster.py -q -s -p no:warnings

# Native multi-tenancy vs the repo-property filter on a real weaviate-server.
tenancy-bench:
	$(PYTHON) bench/tenancy_bench.py --repos 50 --chunks 400 --queries 300

# Render and validate deploy/ (docker-compose config, helm lint/template, kubeconform; CI runs it).
deploy-check:
	PYTHON=$(PYTHON) bash scripts/check_deploy.sh
