# The app image for docker-compose.yml: one image for web (daphne), worker and beat.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
# The exact runtime versions (requirements.lock), then the project itself without resolving again.
COPY requirements.lock ./
RUN pip install --no-cache-dir --no-deps -r requirements.lock
COPY . .
# The project's modules compiled now: with PYTHONDONTWRITEBYTECODE every process would compile
# them again at start (seconds per worker and server). The app runs as an unprivileged user
# (deploy/kubernetes runs it as 10001 too): it writes nothing under /app.
RUN pip install --no-cache-dir --no-deps -e . \
    && DJANGO_DEBUG=true python manage.py collectstatic --no-input \
    && python -m compileall -q /app \
    && useradd --uid 10001 --no-create-home --shell /usr/sbin/nologin app
USER 10001
EXPOSE 8000
CMD ["daphne", "-b", "0.0.0.0", "-p", "8000", "config.asgi:application"]
