# Sourced by the bundle's launchers (not a command): points JUCX and UCX at the bundle's CUDA-aware UCX (ucx/, built
# by build/ucx-cuda.sh) when it has one, so that JUCX's native part loads its libucp and UCX its modules (cuda_copy,
# cuda_ipc) from it. CUWIRE_UCX=system, or a bundle without ucx/, keeps the system's UCX (or a site's, through
# LD_LIBRARY_PATH and UCX_MODULE_DIR). Needs $home, the bundle's directory.
if [[ -d "$home/ucx/lib" && "${CUWIRE_UCX:-bundle}" != system ]]; then
    export LD_LIBRARY_PATH="$home/ucx/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export UCX_MODULE_DIR="$home/ucx/lib/ucx"
fi
