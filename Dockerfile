# Janux image: the `janux` CLI with the dashboard (and the ClickHouse client for the scale path).
#   docker build -t janux:0.1.0 .
#   docker run --rm -p 127.0.0.1:8501:8501 janux:0.1.0
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Only what the distribution needs (see .dockerignore); README.md is the package's readme.
COPY pyproject.toml README.md ./
COPY runtime ./runtime
COPY tracing ./tracing
COPY dashboard ./dashboard
COPY janux ./janux

RUN pip install ".[clickhouse]" \
    && useradd --create-home --uid 10001 --shell /usr/sbin/nologin janux

USER janux
WORKDIR /home/janux

EXPOSE 8501

CMD ["janux", "ui", "--host", "0.0.0.0", "--port", "8501"]
