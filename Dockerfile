# The Tollgate image: engine worker, feedback worker, HTTP service and CLI.
FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY engine ./engine
COPY feedback ./feedback
COPY schemas ./schemas
COPY rules ./rules
RUN pip install -e .
# Every path Tollgate writes to lies outside the root-owned /app; docker-compose.yml sets
# the same values and mounts its volumes exactly there.
ENV TOLLGATE_PATHS__STATE_DIR=/var/lib/tollgate \
    TOLLGATE_PATHS__MODELS_DIR=/var/lib/tollgate/models \
    TOLLGATE_PATHS__EXAMPLES_DIR=/var/lib/tollgate/examples \
    TOLLGATE_PATHS__REPORTS_DIR=/var/lib/tollgate/reports \
    TOLLGATE_PATHS__RULES_DIR=/etc/tollgate/rules
# The mount points must exist in the image, owned by the user the services run as: Docker
# gives a new named volume the ownership of the directory it mounts over, and creates a
# missing mount point owned by root, which that user could not write to. The shipped
# rules are copied to the rules dir so the image also runs without a rules mount.
RUN useradd --create-home --uid 10001 tollgate \
 && mkdir -p /var/lib/tollgate/models /var/lib/tollgate/examples /var/lib/tollgate/reports /etc/tollgate/rules \
 && cp -r rules/. /etc/tollgate/rules/ \
 && chown -R tollgate:tollgate /var/lib/tollgate
USER tollgate
EXPOSE 9400 9401 8080
CMD ["tollgate", "--help"]
