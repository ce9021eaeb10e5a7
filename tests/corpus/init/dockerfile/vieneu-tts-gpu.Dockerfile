# VieNeu-TTS Web UI — GPU image (v3 Turbo on CUDA, v3 Nano on CPU).
# Only the v3 stack is installed: the torch-free core + torch/transformers for the
# PyTorch backend. Legacy v1/v2 backends (lmdeploy, llama-cpp, neucodec) are NOT included.
#
#   docker build -t vieneu-tts:gpu -f docker/Dockerfile.gpu .
#   docker run --gpus all -p 7860:7860 -v hf_cache:/home/app/.cache/huggingface vieneu-tts:gpu
FROM nvidia/cuda:12.8.0-runtime-ubuntu24.04 AS base

ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONUNBUFFERED=1 \
    UV_PROJECT_ENVIRONMENT="/opt/venv" \
    UV_LINK_MODE=copy \
    PATH="/opt/venv/bin:$PATH" \
    PYTHONPATH="/workspace/src:/workspace" \
    HF_HOME=/home/app/.cache/huggingface \
    GRADIO_SERVER_NAME=0.0.0.0 \
    GRADIO_SERVER_PORT=7860 \
    GRADIO_SHARE=0

# Python 3.12 + certificates only (no espeak, no compilers: every dependency ships wheels).
RUN apt-get update && apt-get install -y --no-install-recommends \
    software-properties-common ca-certificates \
    && add-apt-repository ppa:deadsnakes/ppa \
    && apt-get update && apt-get install -y --no-install-recommends python3.12 \
    && rm -rf /var/lib/apt/lists/* \
    && update-alternatives --install /usr/bin/python3 python3 /usr/bin/python3.12 1 \
    && update-alternatives --install /usr/bin/python python /usr/bin/python3.12 1

COPY --from=ghcr.io/astral-sh/uv:latest /uv /uvx /bin/
RUN useradd --create-home --uid 1000 app && mkdir -p /workspace /opt/venv && chown -R app:app /workspace /opt/venv
WORKDIR /workspace

# Dependencies only, wheels only (no setup.py execution), no project build: the app
# runs straight from the source tree via PYTHONPATH.
COPY --chown=app:app pyproject.toml uv.lock ./
RUN uv sync --frozen --no-dev --extra cuda --no-install-project --no-build

# --- Stage: dev (source is bind-mounted by docker-compose) ---
FROM base AS dev
USER app
CMD ["/bin/bash"]

# --- Stage: prod ---
FROM base AS prod
COPY --chown=app:app src/ src/
COPY --chown=app:app apps/ apps/
COPY --chown=app:app config.yaml ./
COPY --chown=app:app examples/audio_ref/ examples/audio_ref/
USER app
EXPOSE 7860
CMD ["python", "apps/gradio_main.py"]

# --- Stage: api (OpenAI-compatible speech API on CUDA; what RunPod pods run) ---
#   docker build --target api -t vieneu-tts:api-gpu -f docker/Dockerfile.gpu .
#   docker run --gpus all -p 8000:8000 -e VIENEU_API_KEY=... vieneu-tts:api-gpu
FROM prod AS api
ENV HOST=0.0.0.0 \
    PORT=8000 \
    VIENEU_BACKEND=pytorch \
    VIENEU_DEVICE=cuda
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=5s --start-period=180s --retries=3 \
    CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=3).status == 200 else 1)"
CMD ["python", "-m", "apps.openai_speech"]
