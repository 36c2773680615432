# The Tollgate image: engine worker, feedback worker, HTTP service and CLI.
FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY engine ./engine
COPY feedback ./feedback
COPY schemas ./schemas
COPY rules ./rules
RUN pip install -e . && useradd --create-home tollgate && mkdir -p /var/lib/tollgate && chown tollgate /var/lib/tollgate
USER tollgate
EXPOSE 9400 8080
CMD ["tollgate", "--help"]
