# A deployable image of the example code location: Dagster webserver + daemon, local Spark.
FROM python:3.11-slim-bookworm

RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
    && rm -rf /var/lib/apt/lists/*
RUN pip install --no-cache-dir uv

WORKDIR /opt/dagster-paimon
COPY pyproject.toml uv.lock README.md ./
COPY dagster_paimon ./dagster_paimon
RUN uv sync --locked --no-dev
COPY assets ./assets
COPY resources ./resources
COPY schedules ./schedules
COPY defs ./defs
COPY definitions.py workspace.yaml ./

ENV PATH="/opt/dagster-paimon/.venv/bin:${PATH}" \
    DAGSTER_HOME=/opt/dagster/home \
    PAIMON_WAREHOUSE=/data/warehouse \
    JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64
RUN mkdir -p "$DAGSTER_HOME" /data/warehouse
COPY dagster.yaml /opt/dagster/home/dagster.yaml
VOLUME ["/data/warehouse", "/opt/dagster/home"]
EXPOSE 3000

# One container runs both the webserver and the daemon (sensors, schedules, run queue), after the
# outside writer's table exists and the adopting component's state lists it.
CMD ["sh", "-c", "python resources/external.py && python resources/refresh_state.py && (dagster-daemon run -w workspace.yaml & exec dagster-webserver -w workspace.yaml -h 0.0.0.0 -p 3000)"]
