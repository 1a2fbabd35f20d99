# One image for every mnemo service; the command picks the service (python -m mnemo.services.<name>).
FROM python:3.11-slim
WORKDIR /app
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
# Probes and /metrics (docs/operations.md) on every interface of the container.
ENV MNEMO_OBSERVE__HTTP_HOST=0.0.0.0
EXPOSE 9464
COPY pyproject.toml README.md ./
COPY mnemo ./mnemo
COPY clients/python ./clients/python
# No [embedded] extra: the services talk to the NATS and MongoDB servers of the deployment (docker-compose.yml).
RUN pip install --no-cache-dir .
USER 1000:1000
CMD ["python", "-m", "mnemo.services.context_assembler"]
