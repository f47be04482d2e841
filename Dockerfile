# bookworm: its Debian has OpenJDK 17, which the Spark backend (pyspark) needs in the worker
# (the driver) and in the spark-master / spark-worker services run from this same image.
FROM python:3.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
 && rm -rf /var/lib/apt/lists/*
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
RUN python -m dpportal.catalogues
RUN DEBUG=1 DPPORTAL_STATIC_COLLECTED=1 python manage.py collectstatic --noinput
RUN useradd --system --uid 1000 dpportal && mkdir -p /data && chown dpportal /data
USER dpportal
EXPOSE 8000
CMD ["gunicorn", "dpportal.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3"]
