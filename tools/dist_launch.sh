# torchrun with mmengine's `pytorch` launcher, sourced by tools/dist_train.sh and
# tools/dist_test.sh so that both start processes the same way.
# Multi-node: set NNODES, NODE_RANK, MASTER_ADDR, PORT on every node. Works on GPUs (nccl) and,
# through the runner the configs name (HyperframeRunner), on CPU-only machines (gloo).

# dist_launch SCRIPT NUM_PROCESSES [SCRIPT arguments...]: run tools/SCRIPT on NUM_PROCESSES
# processes per node.
dist_launch() {
    local script=$1 nproc=$2
    shift 2
    "${PYTHON:-python}" -m torch.distributed.run --nnodes="${NNODES:-1}" \
        --node_rank="${NODE_RANK:-0}" --master_addr="${MASTER_ADDR:-127.0.0.1}" \
        --nproc_per_node="$nproc" --master_port="${PORT:-29500}" \
        "$(dirname "${BASH_SOURCE[0]}")/$script" "$@"
}
