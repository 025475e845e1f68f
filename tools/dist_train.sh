#!/usr/bin/env bash
# Distributed training with torchrun and mmengine's `pytorch` launcher:
#   bash tools/dist_train.sh CONFIG NUM_PROCESSES [mmaction2 train.py options]
# Multi-node: set NNODES, NODE_RANK, MASTER_ADDR, PORT on every node. Works on GPUs (nccl) and,
# through hyperframes_mm's compat fixes, on CPU-only machines (gloo).
set -euo pipefail
CONFIG=$1
NPROC=$2
NNODES=${NNODES:-1}
NODE_RANK=${NODE_RANK:-0}
PORT=${PORT:-29500}
MASTER_ADDR=${MASTER_ADDR:-"127.0.0.1"}
PYTHON=${PYTHON:-python}

"$PYTHON" -m torch.distributed.run --nnodes="$NNODES" --node_rank="$NODE_RANK" \
    --master_addr="$MASTER_ADDR" --nproc_per_node="$NPROC" --master_port="$PORT" \
    "$(dirname "$0")/train.py" "$CONFIG" --launcher pytorch "${@:3}"
