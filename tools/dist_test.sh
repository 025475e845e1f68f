#!/usr/bin/env bash
# Distributed testing with torchrun and mmengine's `pytorch` launcher:
#   bash tools/dist_test.sh CONFIG CHECKPOINT NUM_PROCESSES [mmaction2 test.py options]
set -euo pipefail
CONFIG=$1
CHECKPOINT=$2
NPROC=$3
NNODES=${NNODES:-1}
NODE_RANK=${NODE_RANK:-0}
PORT=${PORT:-29500}
MASTER_ADDR=${MASTER_ADDR:-"127.0.0.1"}
PYTHON=${PYTHON:-python}

"$PYTHON" -m torch.distributed.run --nnodes="$NNODES" --node_rank="$NODE_RANK" \
    --master_addr="$MASTER_ADDR" --nproc_per_node="$NPROC" --master_port="$PORT" \
    "$(dirname "$0")/test.py" "$CONFIG" "$CHECKPOINT" --launcher pytorch "${@:4}"
