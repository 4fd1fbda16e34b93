#!/usr/bin/env bash
# OpenMPI's launcher agent for the multi-host demo, in place of ssh: OpenMPI runs
# `netns-agent.sh HOST COMMAND...` to start its daemon on HOST; this runs COMMAND inside the
# network namespace that plays HOST (10.77.0.N -> lmf-hN). Real clusters use ssh or Slurm.
set -euo pipefail
host="$1"
shift
ns="lmf-h${host##*.}"
exec ip netns exec "$ns" sh -c "$*"
