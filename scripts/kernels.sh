# kernel_env NAME: the environment assignments of a kernel setting of scripts/kernel_settings.txt
# (native: what this CPU picks; avx2: an AVX2 machine; default: ATen's portable kernels, SSE4).
kernel_env() {
    local line
    line=$(grep -E "^$1( |$)" "$(dirname "${BASH_SOURCE[0]}")/kernel_settings.txt") || {
        echo "unknown kernel setting '$1': $(grep -oE '^[a-z0-9]+' \
            "$(dirname "${BASH_SOURCE[0]}")/kernel_settings.txt" | tr '\n' ' ')" >&2
        return 1
    }
    echo "${line#"$1"}"
}
