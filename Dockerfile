# The app image for docker-compose.yml: one image for web (daphne), worker and beat.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
# The exact runtime versions (requirements.lock), then the project itself without resolving again.
COPY requirements.lock ./
RUN pip install --no-cache-dir --no-deps -r requirements.lock
COPY . .
RUN pip install --no-cache-dir --no-deps -e . \
    && DJANGO_DEBUG=true python manage.py collectstatic --no-input
EXPOSE 8000
CMD ["daphne", "-b", "0.0.0.0", "-p", "8000", "config.asgi:application"]
