# Alternative Dockerfile using standard NVIDIA CUDA image
# Use this if you don't have NGC access or prefer building from a vanilla CUDA base

FROM nvidia/cuda:12.6.2-cudnn-runtime-ubuntu22.04

# Prevent interactive prompts during package installation
ENV DEBIAN_FRONTEND=noninteractive

# Set up locale
ENV LANG=C.UTF-8
ENV LC_ALL=C.UTF-8

# Install system dependencies including Python 3.11
RUN apt-get update && apt-get install -y --no-install-recommends \
    software-properties-common \
    && add-apt-repository ppa:deadsnakes/ppa \
    && apt-get update && apt-get install -y --no-install-recommends \
    python3.11 \
    python3.11-venv \
    python3.11-dev \
    python3-pip \
    git \
    wget \
    curl \
    ffmpeg \
    libsm6 \
    libxext6 \
    libgl1-mesa-glx \
    && rm -rf /var/lib/apt/lists/*

# Set python3.11 as default python
RUN update-alternatives --install /usr/bin/python python /usr/bin/python3.11 1 \
    && update-alternatives --install /usr/bin/python3 python3 /usr/bin/python3.11 1 \
    && python -m pip install --no-cache-dir --upgrade pip setuptools wheel

# Set working directory
WORKDIR /app

# Copy requirements first for better caching
COPY requirements.txt pyproject.toml setup.py ./

# Install JAX with CUDA 12 support
# The [cuda12] extra installs JAX with bundled CUDA 12 libraries
RUN pip install --no-cache-dir "jax[cuda12]>=0.6.2"

# Install Flax (must be compatible with installed JAX)
RUN pip install --no-cache-dir "flax>=0.11.2"

# Install TensorFlow with CUDA support
RUN pip install --no-cache-dir "tensorflow[and-cuda]>=2.20.0"

# Install remaining dependencies
RUN pip install --no-cache-dir \
    "numpy>=1.26" \
    "absl-py>=2.3.1" \
    "einops>=0.8.1" \
    "einshape>=1.0" \
    "huggingface-hub>=0.36.0" \
    "mediapy>=1.2.5" \
    "sentencepiece>=0.2.1" \
    pillow

# Copy the rest of the application
COPY . .

# Install the package in editable mode
RUN pip install --no-cache-dir -e .

# Set environment variables for optimal GPU usage
ENV TF_FORCE_GPU_ALLOW_GROWTH=true
ENV XLA_PYTHON_CLIENT_MEM_FRACTION=0.9
ENV XLA_FLAGS="--xla_gpu_cuda_data_dir=/usr/local/cuda"

# Default command
CMD ["python", "main.py"]

