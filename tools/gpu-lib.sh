# gpu-lib.sh: what tools/gpu-check.sh and tools/gpu-profile.sh share;
# sourced, not run.

# The Python that lists the site-packages folders where PyTorch's wheels
# keep cuDNN 9 and cuBLAS 13 (nvidia/*/lib): run by each caller under its
# own time limit, its output handed to gpu_library_path.
gpu_site_py='import site; print(" ".join(site.getsitepackages() + [site.getusersitepackages()]))'

# gpu_present: whether nvidia-smi lists a device, within 15 s.
gpu_present() {
  command -v nvidia-smi > /dev/null 2>&1 && timeout -k 2 15 nvidia-smi -L > /dev/null 2>&1
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
