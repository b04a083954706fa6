# gpu-lib.sh: what tools/gpu-check.sh and tools/gpu-profile.sh share;
# sourced, not run.

# The Python that lists the site-packages folders where PyTorch's wheels
# keep cuDNN 9 and cuBLAS 13 (nvidia/*/lib): run by each caller under its
# own time limit, its output handed to gpu_library_path.
gpu_site_py='import site; print(" ".join(site.getsitepackages() + [site.getusersitepackages()]))'

# The Python that asks the CUDA driver (cuInit, cuDeviceGetCount) and
# then the runtime (cudaGetDeviceCount) how many GPUs there are; prints
# the count and exits 0 when there is at least one.  Only ctypes: no
# PyTorch needed.
gpu_count_py='
import ctypes, sys
n = ctypes.c_int(0)
for name in ("libcuda.so.1", "libcuda.so"):
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        continue
    if lib.cuInit(0) == 0 and lib.cuDeviceGetCount(ctypes.byref(n)) == 0 and n.value > 0:
        print(n.value, "by cuDeviceGetCount")
        sys.exit(0)
    break
for name in ("libcudart.so", "libcudart.so.13", "libcudart.so.12"):
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        continue
    if lib.cudaGetDeviceCount(ctypes.byref(n)) == 0 and n.value > 0:
        print(n.value, "by cudaGetDeviceCount")
        sys.exit(0)
    break
sys.exit(1)
'

# gpu_present: whether there is a GPU, within seconds, asking in turn
# nvidia-smi (when it is on PATH), the driver's device nodes
# ($GPU_DEV_DIR/nvidia0, ...; GPU_DEV_DIR defaults to /dev, tests point
# it elsewhere) and the CUDA driver or runtime through ${PYTHON:-python3}
# (a host whose driver has no nvidia-smi, or hides the nodes).  Sets
# gpu_found_by to how it found one.
gpu_present() {
  local node found
  gpu_found_by=
  if command -v nvidia-smi > /dev/null 2>&1 && timeout -k 2 15 nvidia-smi -L > /dev/null 2>&1; then
    gpu_found_by="nvidia-smi"
    return 0
  fi
  for node in "${GPU_DEV_DIR:-/dev}"/nvidia[0-9]*; do
    if [ -e "$node" ]; then
      gpu_found_by="the device node $node (no nvidia-smi on PATH, or it lists none)"
      return 0
    fi
  done
  if found=$(timeout -k 2 15 "${PYTHON:-python3}" -c "$gpu_count_py" 2> /dev/null); then
    gpu_found_by="CUDA: ${found%% *} GPU(s) ${found#* } (no nvidia-smi on PATH, no device node)"
    return 0
  fi
  return 1
}

# gpu_library_path BUNDLE_DIR SITE_DIRS: the library path Tach's binaries
# run with on a GPU host: BUNDLE_DIR/lib (when BUNDLE_DIR is not empty),
# the CUDA toolkit, each SITE_DIRS folder's nvidia/*/lib, then what
# LD_LIBRARY_PATH held.  Only Tach's commands get it: it can break
# 'import torch'.
gpu_library_path() {
  local path=${1:+$1/lib} d lib
  [ -d /usr/local/cuda/lib64 ] && path=${path:+$path:}/usr/local/cuda/lib64
  for d in $2; do
    for lib in "$d"/nvidia/*/lib; do
      [ -d "$lib" ] && path=${path:+$path:}$lib
    done
  done
  echo "$path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}
