# syntax=docker/dockerfile:1.6

ARG TORCH=2.7.0
ARG CUDA_TAG=cu128

# -------- Builder (Compiler/NVCC Toolchain) --------
FROM nvidia/cuda:12.8.0-cudnn-devel-ubuntu22.04 AS build

ARG TORCH
ARG CUDA_TAG
RUN echo "TORCH=${TORCH} CUDA_TAG=${CUDA_TAG}"

ENV DEBIAN_FRONTEND=noninteractive \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

RUN apt-get update && apt-get install -y --no-install-recommends \
      git \
      build-essential \
      ninja-build \
      python3 \
      python3-pip \
      python3-venv \
      python3-dev \
      wget \
      ca-certificates \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/spt
COPY . /opt/spt

# venv
RUN python3 -m venv --system-site-packages /opt/venv
ENV PATH=/opt/venv/bin:$PATH

# Pins
RUN pip install -U pip wheel "setuptools<81" "numpy==1.26.4"

ARG TORCH
ARG CUDA_TAG

# Install PyTorch manuell
RUN pip install torch==${TORCH} torchvision --index-url https://download.pytorch.org/whl/${CUDA_TAG}

# Torch check
RUN python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"

# Pip packages
RUN pip install \
    hydra-core hydra-colorlog pyrootutils "rich<=14.0" \
    pytorch-lightning torchmetrics==0.11.4 \
    laspy plyfile h5py colorhash numba pandas \
    plotly matplotlib wandb

# PyG Wheels
RUN pip install pyg_lib torch_scatter torch_cluster \
      -f https://data.pyg.org/whl/torch-${TORCH}+${CUDA_TAG}.html \
 && pip install torch_geometric==2.3.0

# SPT Packages
RUN pip install pgeof pycut-pursuit pygrid-graph torch-graph-components torch-ransac3d

# Compile Custom Extensions
RUN python scripts/setup_dependencies.py build_ext --build-lib=bin

# FRNN
ARG TORCH_CUDA_ARCH_LIST="8.6;12.0"
ENV TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST}
ENV MAX_JOBS=8

RUN python -m pip install --no-build-isolation -v src/dependencies/FRNN/external/prefix_sum \
 && python -m pip install --no-build-isolation -v src/dependencies/FRNN


# --------------------------------------------
# -------- Runtime (No Compiler/NVCC) --------
# --------------------------------------------
FROM nvidia/cuda:12.8.0-cudnn-runtime-ubuntu22.04 AS runtime

ENV DEBIAN_FRONTEND=noninteractive \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

# Installiere minimale Runtime-Dependencies
RUN apt-get update && apt-get install -y --no-install-recommends \
      python3 \
      python3-venv \
      libgl1 \
      libgomp1 \
      libglib2.0-0 \
    && rm -rf /var/lib/apt/lists/*

# Kopiere venv aus dem Build-Stage
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH

WORKDIR /opt/spt
COPY . /opt/spt

# Kopiere kompilierte Artefakte (Extensions)
COPY --from=build /opt/spt/src/dependencies/parallel_cut_pursuit/python/bin /opt/spt/src/dependencies/parallel_cut_pursuit/python/bin
COPY --from=build /opt/spt/src/dependencies/grid_graph/python/bin /opt/spt/src/dependencies/grid_graph/python/bin

ENV PYTHONPATH=/opt/spt

CMD ["sleep", "infinity"]
