"""Django settings, read from the environment through one django-environ Env."""

from __future__ import annotations

import os
import sys
import warnings
from decimal import Decimal, InvalidOperation
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
if (BASE_DIR / ".env").exists():
    environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

# --- Core ----------------------------------------------------------------------------------------
# Off unless switched on: a deploy that forgets the variable fails closed (a secret key is then
# required). `make run`, the test settings and .env.example turn it on for development.
DEBUG = env.bool("DJANGO_DEBUG", default=False)
if DEBUG:
    SECRET_KEY = env("DJANGO_SECRET_KEY", default="insecure-embedded-development-key-change-me")
else:
    SECRET_KEY = env("DJANGO_SECRET_KEY")  # production: no default, fail loudly
ALLOWED_HOSTS = env.list(
    "DJANGO_ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"] if DEBUG else []
)
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

DJANGO_APPS = [
    "daphne",  # makes runserver an ASGI server (websockets in development)
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
]
THIRD_PARTY_APPS = [
    "channels",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
]
LOCAL_APPS = [
    "agents",
    "delegation",
    "chat",
    "chat.channels",
    "reminders",
    "reminders.watches",
    "agents.knowledge",
    "agents.mcp",
    "delegation.routing",
    "delegation.usage",
    "delegation.humans",
    "delegation.evals",
]
INSTALLED_APPS = DJANGO_APPS + THIRD_PARTY_APPS + LOCAL_APPS

MIDDLEWARE = [
    "config.health.probes_middleware",  # /healthz, /readyz, a token's /metrics: before the rest
    "django.middleware.security.SecurityMiddleware",
    "chat.middleware.ContentSecurityPolicyMiddleware",  # strict CSP (chat/middleware.py)
    "whitenoise.middleware.WhiteNoiseMiddleware",  # static files from any ASGI server (daphne)
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",  # the page's language: choice, else browser
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "config.admin_time.AdminTimeZoneMiddleware",  # admin pages in the staff member's zone
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "config.admin_home.admin_home",  # the admin home grouped by task
                "config.oidc.sign_in_options",  # the sign-in pages' SSO button
            ],
        },
    },
]

# --- Database ------------------------------------------------------------------------------------
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Django's backend with this process's writers queued on one lock (config/db/sqlite_backend).
    DATABASES["default"]["ENGINE"] = "config.db.sqlite_backend"
    # WAL + IMMEDIATE transactions let the in-process worker threads write beside the server.
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    }
    # A file (threads share it) per test process, so parallel runs never collide.
    DATABASES["default"]["TEST"] = {
        "NAME": env("SQLITE_TEST_NAME", default=f"/tmp/agent-platform-test-{os.getpid()}.sqlite3")
    }
else:
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    # Postgres plans a statement it has seen DATABASE_PREPARE_THRESHOLD times once per
    # connection, not every time: the ORM sends the same text for the same query, and planning
    # was most of the hot statements' time (the run claim: 2.2 ms planned each time, 0.8 ms
    # prepared). Behind a pooler in transaction mode without prepared-statement support
    # (PgBouncer < 1.21), set it empty to turn this off (docs/decisions/0006-performance.md).
    _prepare_after = env("DATABASE_PREPARE_THRESHOLD", default="5")
    if _prepare_after:
        DATABASES["default"].setdefault("OPTIONS", {}).update(
            server_side_binding=True, prepare_threshold=int(_prepare_after)
        )
    # A pool per process (psycopg's, through Django), at most DATABASE_POOL_MAX_SIZE connections:
    # the ASGI server runs each request's database work on a thread of its own, so connections
    # kept per thread were one per request in flight, idle for a minute after (29 in one web
    # process under load). A thread waits up to DATABASE_POOL_TIMEOUT s for a free one. 0 turns
    # the pool off, e.g. behind PgBouncer (docs/operations.md).
    _pool_max = env.int("DATABASE_POOL_MAX_SIZE", default=10)
    if _pool_max:
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": 1,
            "max_size": _pool_max,
            "timeout": env.float("DATABASE_POOL_TIMEOUT", default=10.0),
        }
        DATABASES["default"]["CONN_MAX_AGE"] = 0  # the pool keeps them (Django allows no both)
    # Behind PgBouncer in transaction mode, server-side cursors (QuerySet.iterator) break.
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = env.bool(
        "DATABASE_DISABLE_SERVER_SIDE_CURSORS", default=False
    )
# Persistent connections (SQLite, or Postgres without the pool): a task or request reuses its
# thread's connection instead of opening one (with its PRAGMAs) and closing it every time
# (docs/decisions/0006-performance.md).
DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("DATABASE_CONN_MAX_AGE", default=60))
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Cache (API throttling): Redis when configured, else per-process memory ---------------------
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": env("REDIS_URL"),
    }
    if env("REDIS_URL", default="")
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
}

# --- Redis, channels -----------------------------------------------------------------------------
REDIS_URL = env("REDIS_URL", default="")
if REDIS_URL:
    # channels_redis waits for a socket's next message with BZPOPMIN for up to 5 s per read; the
    # redis client's default socket timeout (5 s in redis-py 6+) would race it and kill every
    # idle socket and SSE stream, so reads get a longer timeout. Keepalive and health checks
    # catch dead connections; a short retry rides out a Redis restart.
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                "hosts": [
                    {
                        "address": REDIS_URL,
                        "socket_timeout": 20,
                        "socket_connect_timeout": 5,
                        "socket_keepalive": True,
                        "health_check_interval": 15,
                        "retry": Retry(ExponentialBackoff(cap=2.0, base=0.2), retries=3),
                    }
                ],
                # Each web process reads its sockets' events from one Redis list; when that
                # list is full, group_send skips it silently (logged at INFO). 200 users
                # streaming at once filled 1,500 (bench/scale_out.py), and turns lost their
                # ends; the page also asks again when a turn goes quiet (CHAT_QUIET_RESYNC_*).
                "capacity": env.int("CHANNEL_LAYER_CAPACITY", default=20_000),
                "expiry": 30,
            },
        }
    }
else:
    CHANNEL_LAYERS = {
        "default": {"BACKEND": "config.inmemory_layer.ThreadSafeInMemoryChannelLayer"}
    }

# --- Auth, i18n, static --------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "chat:index"
LOGOUT_REDIRECT_URL = "login"
# Sign-in with the company's identity provider (OpenID Connect; config/oidc.py), on when a
# client id and the issuer (or its endpoints, OIDC_OP_*) are set. Local accounts stay.
OIDC_ISSUER = env("OIDC_ISSUER", default="")  # its /.well-known/openid-configuration is read
OIDC_RP_CLIENT_ID = env("OIDC_RP_CLIENT_ID", default="")
OIDC_RP_CLIENT_SECRET = env("OIDC_RP_CLIENT_SECRET", default="")
OIDC_RP_SIGN_ALGO = env("OIDC_RP_SIGN_ALGO", default="RS256")
OIDC_RP_SCOPES = env("OIDC_RP_SCOPES", default="openid email profile")
OIDC_OP_AUTHORIZATION_ENDPOINT = env("OIDC_OP_AUTHORIZATION_ENDPOINT", default="")
OIDC_OP_TOKEN_ENDPOINT = env("OIDC_OP_TOKEN_ENDPOINT", default="")
OIDC_OP_USER_ENDPOINT = env("OIDC_OP_USER_ENDPOINT", default="")
OIDC_OP_JWKS_ENDPOINT = env("OIDC_OP_JWKS_ENDPOINT", default="")
OIDC_GROUPS_CLAIM = env("OIDC_GROUPS_CLAIM", default="groups")
OIDC_GROUP_MAP = env.json("OIDC_GROUP_MAP", default={})  # claim value -> Django group name
OIDC_STAFF_GROUPS = env.list("OIDC_STAFF_GROUPS", default=[])  # claim values that make staff
OIDC_PROVIDER_NAME = env("OIDC_PROVIDER_NAME", default="SSO")  # on the sign-in button
OIDC_TIMEOUT = env.float("OIDC_TIMEOUT", default=10.0)
OIDC_USE_PKCE = True
OIDC_ENABLED = bool(OIDC_RP_CLIENT_ID and (OIDC_ISSUER or OIDC_OP_AUTHORIZATION_ENDPOINT))
OIDC_AUTHENTICATE_CLASS = "config.oidc.SignInRequestView"
OIDC_CALLBACK_CLASS = "config.oidc.SignInCallbackView"
LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/?sso=failed"
AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.ModelBackend"] + (
    ["config.oidc.GroupClaimsBackend"] if OIDC_ENABLED else []
)

LANGUAGE_CODE = "en-us"
TIME_ZONE = env("DJANGO_TIME_ZONE", default="UTC")
USE_I18N = True
# The chat page in English, Traditional and Simplified Chinese (locale/, docs/web-chat.md).
LANGUAGES = [("en", "English"), ("zh-hant", "繁體中文"), ("zh-hans", "简体中文")]
# locale_vendor/: django-celery-beat's zh_Hant, converted from its own zh_Hans (see its header).
LOCALE_PATHS = [BASE_DIR / "locale", BASE_DIR / "locale_vendor"]
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
# DEBUG serves straight from the app folders; production from `collectstatic` output.
WHITENOISE_USE_FINDERS = DEBUG
WHITENOISE_AUTOREFRESH = DEBUG
if DEBUG:
    warnings.filterwarnings("ignore", message="No directory at", module="whitenoise.base")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# --- Security (production values when DEBUG is off; `manage.py check --deploy` passes) ----------
if not DEBUG:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=True)
    SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
    SECURE_HSTS_PRELOAD = env.bool("DJANGO_SECURE_HSTS_PRELOAD", default=True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    X_FRAME_OPTIONS = "DENY"

# --- Operations: logs, traces, metrics, health (docs/operations.md) ------------------------------
# LOG_FORMAT=json: one JSON object per line, each line of a turn's work with its run and trace
# ids (config/logs.py); plain text otherwise.
LOG_FORMAT = env("LOG_FORMAT", default="plain")
if LOG_FORMAT not in ("plain", "json"):
    raise ImproperlyConfigured("LOG_FORMAT must be plain or json")
# OpenTelemetry traces, exported over OTLP only when an endpoint is set; the exporter reads the
# other standard OTEL_* variables itself (OTEL_EXPORTER_OTLP_PROTOCOL, _HEADERS, OTEL_SERVICE_NAME).
OTEL_EXPORTER_OTLP_ENDPOINT = env("OTEL_EXPORTER_OTLP_ENDPOINT", default="")
OTEL_GENAI_CAPTURE_CONTENT = env.bool("OTEL_GENAI_CAPTURE_CONTENT", default=False)
# The admin's run page links its trace: e.g. http://jaeger:16686/trace/{trace_id}
OTEL_TRACE_URL_TEMPLATE = env("OTEL_TRACE_URL_TEMPLATE", default="")
# /metrics answers staff, or a scraper presenting this as a bearer token (blank: staff only).
METRICS_TOKEN = env("METRICS_TOKEN", default="")
# A Celery worker serves /metrics, /healthz and /readyz on this port when set (0: none).
WORKER_HTTP_PORT = env.int("WORKER_HTTP_PORT", default=0)
WORKER_HTTP_HOST = env("WORKER_HTTP_HOST", default="0.0.0.0")  # noqa: S104 (a pod's probe)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"trace": {"()": "config.logs.TraceFilter"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["trace"]}
    },
    "root": {"handlers": ["console"], "level": env("DJANGO_LOG_LEVEL", default="INFO")},
    "loggers": {
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
        "daphne": {"level": "WARNING"},
        # One line each: the handlers Django and Channels configure for these are dropped (a
        # logger listed here loses them), so their records reach the root's handler alone.
        "django": {"handlers": [], "level": env("DJANGO_LOG_LEVEL", default="INFO")},
        "django.channels.server": {"handlers": [], "level": "INFO"},
        "django.utils.autoreload": {"level": "WARNING"},
    },
}

# --- REST framework ------------------------------------------------------------------------------
REST_FRAMEWORK = {
    # Tokens first, so an API client without credentials gets 401 with WWW-Authenticate.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "chat.tokens.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",  # the browser, with CSRF
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_THROTTLE_CLASSES": ["rest_framework.throttling.UserRateThrottle"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "config.api_negotiation.StrictContentNegotiation",
    "DEFAULT_THROTTLE_RATES": {
        "user": env("API_THROTTLE_USER", default="600/minute"),
        "send": env("API_THROTTLE_SEND", default="60/minute"),
        "voice": env("API_THROTTLE_VOICE", default="30/minute"),  # transcriptions, speech
    },
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "EXCEPTION_HANDLER": "config.errors.api_exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Agent platform API",
    "DESCRIPTION": "Chat with admin-managed agents, stream their work, manage agents and tokens. "
    "Events use the envelope of docs/protocol.md.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "chat.sse_schema.add_event_streams",
        "config.schema.tag_by_area",  # operations grouped by area on /api/docs/
    ],
}
API_PAGE_SIZE = env.int("API_PAGE_SIZE", default=50)
SSE_KEEPALIVE_SECONDS = env.float("SSE_KEEPALIVE_SECONDS", default=15.0)
# Each socket and SSE stream checks this often that the channel layer still has its groups (a
# Redis restart forgets them): one that lost them closes, for its client to re-join.
RELAY_PROBE_SECONDS = env.float("RELAY_PROBE_SECONDS", default=30.0)

# --- Model providers -----------------------------------------------------------------------------
OPENAI_API_KEY = env("OPENAI_API_KEY", default="")
OPENAI_BASE_URL = env("OPENAI_BASE_URL", default="")
OPENAI_MODEL = env("OPENAI_MODEL", default="gpt-4o-mini")
OPENAI_TIMEOUT = env.float("OPENAI_TIMEOUT", default=60.0)  # seconds per model call, whole stream
# A remote A2A agent (provider "a2a"): seconds its whole answer may take (an agent's own call
# timeout wins).
A2A_TIMEOUT_SECONDS = env.float("A2A_TIMEOUT_SECONDS", default=120.0)
# How many agent platforms a request may have come through (A2A, counted in the message's
# `agent_platform_hops`) before ours refuses it: two platforms asking each other stop there.
A2A_MAX_HOPS = env.int("A2A_MAX_HOPS", default=3)
# The demo's remote agent (chat/interop/demo_translator.py): served at /demo/a2a/translator/ by
# this process when on (development, by default), reached at DEMO_SITE_URL, this server's own
# address (`make run` sets it from HOST and PORT).
DEMO_TRANSLATOR = env.bool("DEMO_TRANSLATOR", default=DEBUG)
DEMO_SITE_URL = env("DEMO_SITE_URL", default="http://127.0.0.1:8000")
OPENAI_MAX_RETRIES = env.int("OPENAI_MAX_RETRIES", default=2)  # on 429/5xx/connection errors
# The provider agents use when theirs is "default": openai once a key or server is configured.
DEFAULT_MODEL_PROVIDER = env(
    "DEFAULT_MODEL_PROVIDER", default="openai" if (OPENAI_API_KEY or OPENAI_BASE_URL) else "offline"
)
OFFLINE_MODEL_DELAY_MS = env.int("OFFLINE_MODEL_DELAY_MS", default=25)  # per streamed word

# --- Voice (docs/voice.md) -----------------------------------------------------------------------
# Speech to text (the composer's microphone) and text to speech ("Read aloud" on answers) through
# the OpenAI-compatible audio API: the model server and key above unless VOICE_BASE_URL and
# VOICE_API_KEY name another (a chat server such as vLLM may have no audio). Each half switches
# on with its model: without STT_MODEL the page has no microphone, without TTS_MODEL no
# "Read aloud".
STT_MODEL = env("STT_MODEL", default="")
TTS_MODEL = env("TTS_MODEL", default="")
VOICE_BASE_URL = env("VOICE_BASE_URL", default="")
VOICE_API_KEY = env("VOICE_API_KEY", default="")
VOICE_TIMEOUT = env.float("VOICE_TIMEOUT", default=30.0)  # seconds per transcription or speech
# The voice an answer is read in, by its language (a language missing here: its base language,
# then the first voice listed).
TTS_VOICES = env.dict("TTS_VOICES", default={"en": "alloy", "zh-hant": "nova", "zh-hans": "nova"})
VOICE_MAX_UPLOAD_BYTES = env.int("VOICE_MAX_UPLOAD_BYTES", default=10 * 1024 * 1024)
STT_MAX_SECONDS = env.int("STT_MAX_SECONDS", default=120)  # the page stops recording after it
TTS_MAX_CHARS = env.int("TTS_MAX_CHARS", default=4096)  # a longer answer is not read aloud

# --- Messaging channels: LINE, Slack (docs/channels.md) -----------------------------------------
# A channel without its secrets is off (its webhook answers 404; admin says so). Secrets live in
# the environment only. The API base URLs default to the real services (tests and proxies may
# point elsewhere); SITE_URL is this platform's public address, for the links it sends.
LINE_CHANNEL_SECRET = env("LINE_CHANNEL_SECRET", default="")
LINE_CHANNEL_ACCESS_TOKEN = env("LINE_CHANNEL_ACCESS_TOKEN", default="")
LINE_API_BASE_URL = env("LINE_API_BASE_URL", default="https://api.line.me")
SLACK_SIGNING_SECRET = env("SLACK_SIGNING_SECRET", default="")
SLACK_BOT_TOKEN = env("SLACK_BOT_TOKEN", default="")
SLACK_API_BASE_URL = env("SLACK_API_BASE_URL", default="https://slack.com/api/")
# Slack channel ids (C…) where staff approvals are posted with Approve and Reject buttons:
# requests for no team in SLACK_APPROVALS_CHANNEL, a team's only in its own channel
# (SLACK_APPROVALS_CHANNELS, "Planners=C0123,Finance=C0456"; a team without one: the inbox
# only), so nobody outside a team reads its requests. Slack's Interactivity Request URL is
# then SITE_URL + /channels/slack/interactions.
SLACK_APPROVALS_CHANNEL = env("SLACK_APPROVALS_CHANNEL", default="")
SLACK_APPROVALS_CHANNELS = env.dict("SLACK_APPROVALS_CHANNELS", default={})
SITE_URL = env("SITE_URL", default=DEMO_SITE_URL)
# The offline demo's LINE (chat/channels/demo/; `make run` turns it on): a stand-in for LINE's
# API served by this process, and a phone page at /demo/line/. Only in development (its secret
# is public) and while no real LINE channel is configured: it then sets the channel's secrets
# and points LINE_API_BASE_URL at itself.
DEMO_LINE = env.bool("DEMO_LINE", default=False) and DEBUG and not LINE_CHANNEL_SECRET
if DEMO_LINE:
    LINE_CHANNEL_SECRET = "demo-line-secret"
    LINE_CHANNEL_ACCESS_TOKEN = "demo-line-token"
    LINE_API_BASE_URL = DEMO_SITE_URL.rstrip("/") + "/demo/line/api"
# An event not processed, or an ended turn's answer not sent, this long: queued again (a dead
# worker's); the sweep runs as often as the runs' sweep.
CHANNEL_STALE_SECONDS = env.int("CHANNEL_STALE_SECONDS", default=60)

# --- Chat and runs -------------------------------------------------------------------------------
CHAT_MAX_MESSAGE_CHARS = env.int("CHAT_MAX_MESSAGE_CHARS", default=32_000)
# A turn's page that hears nothing this long asks for the session's snapshot (which says whether
# the turn still runs), then waits twice as long each time, up to two minutes: an event the
# channel layer dropped (a full queue) cannot leave a finished turn looking busy.
CHAT_QUIET_RESYNC_SECONDS = env.float("CHAT_QUIET_RESYNC_SECONDS", default=15.0)
WS_MAX_FRAME_BYTES = env.int("WS_MAX_FRAME_BYTES", default=256 * 1024)
# A session snapshot (and each page of older history) carries its newest messages within this
# many bytes of JSON: a long session opens as fast as a short one, in frames any server takes.
SNAPSHOT_MAX_BYTES = env.int("SNAPSHOT_MAX_BYTES", default=256 * 1024)
# The ASGI server's own cap on an inbound websocket message: above WS_MAX_FRAME_BYTES and below
# this a frame is answered `frame_too_large` with the socket kept; above it the server closes
# the socket (1009). `manage.py runserver` reads the DAPHNE_ names; Procfile and compose pass
# the same number to daphne.
WS_SERVER_MAX_BYTES = env.int("WS_SERVER_MAX_BYTES", default=4 * 1024 * 1024)
DAPHNE_WEBSOCKET_MAX_MESSAGE_SIZE = DAPHNE_WEBSOCKET_MAX_FRAME_SIZE = WS_SERVER_MAX_BYTES
CHAT_HISTORY_TURNS = env.int("CHAT_HISTORY_TURNS", default=20)  # earlier turns sent to the model
EVENT_COALESCE_MS = env.int("EVENT_COALESCE_MS", default=40)  # delta batching window
RUN_DEADLINE_SECONDS = env.int("RUN_DEADLINE_SECONDS", default=900)
TOOL_RESULT_MAX_CHARS = env.int("TOOL_RESULT_MAX_CHARS", default=16_000)
DELEGATION_MAX_DEPTH = env.int("DELEGATION_MAX_DEPTH", default=2)  # global cap on tree depth
# One turn's budget, shared by every run in its delegation tree.
TURN_MAX_DELEGATIONS = env.int("TURN_MAX_DELEGATIONS", default=8)
TURN_MAX_MODEL_CALLS = env.int("TURN_MAX_MODEL_CALLS", default=30)
TURN_MAX_TOKENS = env.int("TURN_MAX_TOKENS", default=200_000)
# Calls of tools that reach outside the platform (MCP servers, the web, mail) in one turn.
TURN_MAX_TOOL_CALLS = env.int("TURN_MAX_TOOL_CALLS", default=40)
CHILD_DEADLINE_SECONDS = env.int("CHILD_DEADLINE_SECONDS", default=300)  # and never past the root's
# Workers renew a run's lease every third of this; a dead worker's run is taken over after it.
RUN_LEASE_SECONDS = env.int("RUN_LEASE_SECONDS", default=30)
SWEEP_INTERVAL_SECONDS = env.float("SWEEP_INTERVAL_SECONDS", default=5.0)
QUEUED_STALE_SECONDS = env.int("QUEUED_STALE_SECONDS", default=60)  # re-send a lost task after
# Switches for debugging an incident (docs/runs.md): a task body runs the run it made ready next
# itself (an expert it asked, the caller its end resumed) instead of sending it to the queue; a
# process keeps what a run reads once (its offer of experts, routing) for its later deliveries.
RUN_HAND_OVER = env.bool("RUN_HAND_OVER", default=True)
RUN_READS_CACHE = env.bool("RUN_READS_CACHE", default=True)

# --- Routing that learns (docs/autonomy.md) -------------------------------------------------------
# Counting how delegations went (a statement where each thing happens: a run's end, a verdict, a
# rating); the figures routing reads cover the last ROUTING_STATS_WINDOW_DAYS days.
ROUTING_STATS_ENABLED = env.bool("ROUTING_STATS_ENABLED", default=True)
ROUTING_STATS_WINDOW_DAYS = env.int("ROUTING_STATS_WINDOW_DAYS", default=30)

# --- Usage and cost (docs/usage.md) ---------------------------------------------------------------
# Money budgets in USAGE_CURRENCY, decimal strings ("0.50"); empty means no limit. A call whose
# estimate (prompt tokens + max output tokens at current prices) would pass one is not made.
USAGE_CURRENCY = env("USAGE_CURRENCY", default="USD")
# Each process keeps a model's prices this long (a change made in another process, such as the
# admin's, prices calls from then on at the latest); a change in the same process applies at once.
PRICE_CACHE_SECONDS = env.float("PRICE_CACHE_SECONDS", default=60.0)


def _money_setting(name: str, default: str) -> Decimal | None:
    """A money limit from the environment: a non-negative decimal, or None when empty."""
    raw = env(name, default=default).strip()
    if not raw:
        return None
    try:
        value = Decimal(raw)
    except InvalidOperation:
        raise ImproperlyConfigured(f"{name} must be a decimal amount, e.g. 0.50") from None
    if not value.is_finite() or value < 0:
        raise ImproperlyConfigured(f"{name} must be a decimal amount of 0 or more")
    return value


TURN_MAX_COST = _money_setting("TURN_MAX_COST", "1.00")  # one turn, its delegations included
USER_DAILY_MAX_COST = _money_setting("USER_DAILY_MAX_COST", "")
USER_MONTHLY_MAX_COST = _money_setting("USER_MONTHLY_MAX_COST", "")
AGENT_DAILY_MAX_COST = _money_setting("AGENT_DAILY_MAX_COST", "")
AGENT_MONTHLY_MAX_COST = _money_setting("AGENT_MONTHLY_MAX_COST", "")
# Output tokens assumed for the estimate of a call whose agent sets no max tokens.
USAGE_ESTIMATE_OUTPUT_TOKENS = env.int("USAGE_ESTIMATE_OUTPUT_TOKENS", default=4096)
if USAGE_ESTIMATE_OUTPUT_TOKENS < 1:
    raise ImproperlyConfigured("USAGE_ESTIMATE_OUTPUT_TOKENS must be 1 or more")

# --- Humans in the loop (docs/humans.md) ----------------------------------------------------------
# How long a question or tool approval waits for a person (an agent may set its own); then the
# run goes on with "no answer from a human".
HUMANS_SLA_SECONDS = env.int("HUMANS_SLA_SECONDS", default=3600)
HUMANS_ANSWER_MAX_CHARS = env.int("HUMANS_ANSWER_MAX_CHARS", default=4000)  # a person's answer
HUMANS_VALIDATOR_TIMEOUT = env.float("HUMANS_VALIDATOR_TIMEOUT", default=20.0)  # seconds
# A validator's confidence below this marks the answer low confidence (sent for review).
HUMANS_LOW_CONFIDENCE = env.float("HUMANS_LOW_CONFIDENCE", default=0.5)

# --- Outside tools: MCP servers (docs/mcp.md) ---------------------------------------------------
# The commands stdio MCP servers may be started with, by name: an McpServer row names one, so the
# database never holds a command line. JSON in the environment, e.g.
# MCP_STDIO_COMMANDS='{"erp": ["/opt/erp-mcp/bin/serve", "--stdio"]}'.
MCP_STDIO_COMMANDS = {
    "finance-demo": [sys.executable, "-m", "agents.mcp.demo_finance"],
    **env.json("MCP_STDIO_COMMANDS", default={}),
}
# A new server's timeouts, in seconds: to connect, and for one call (each server sets its own).
MCP_CONNECT_TIMEOUT = env.float("MCP_CONNECT_TIMEOUT", default=10.0)
MCP_CALL_TIMEOUT = env.float("MCP_CALL_TIMEOUT", default=30.0)
# What the model and the page read of one call's result, in characters (a note says what was cut).
MCP_RESULT_MAX_CHARS = env.int("MCP_RESULT_MAX_CHARS", default=12_000)
# A per-user server receives the end user as a signed assertion (a JWT, HS256) in this header,
# signed with MCP_USER_ASSERTION_KEY (default: SECRET_KEY) and valid this many seconds.
MCP_USER_ASSERTION_HEADER = env("MCP_USER_ASSERTION_HEADER", default="X-Platform-User-Assertion")
# Each server's assertions are signed with its own key, derived from this one (required for
# assertion servers; never SECRET_KEY). The admin shows a server's key to give its operator.
MCP_USER_ASSERTION_KEY = env("MCP_USER_ASSERTION_KEY", default="")
# Environment variables a server's headers may read besides MCP_* ones (comma-separated).
MCP_HEADER_VARIABLES = env.list("MCP_HEADER_VARIABLES", default=[])
MCP_USER_ASSERTION_SECONDS = env.int("MCP_USER_ASSERTION_SECONDS", default=300)
# Users' own tokens for "token" servers are sealed with this key (default: SECRET_KEY); changing
# it makes every user connect again.
MCP_TOKEN_KEY = env("MCP_TOKEN_KEY", default="")
MCP_TOKEN_MAX_CHARS = env.int("MCP_TOKEN_MAX_CHARS", default=4096)

# --- Outside tools: web and mail (docs/tools.md) -------------------------------------------------
# Local or private hosts web_fetch may open all the same: host, host:port or CIDR, comma-separated.
WEB_FETCH_ALLOW = env.list("WEB_FETCH_ALLOW", default=[])
WEB_FETCH_MAX_BYTES = env.int("WEB_FETCH_MAX_BYTES", default=2 * 1024 * 1024)  # then it stops
WEB_FETCH_MAX_CHARS = env.int("WEB_FETCH_MAX_CHARS", default=12_000)  # page text for the model
WEB_FETCH_TIMEOUT_SECONDS = env.float("WEB_FETCH_TIMEOUT_SECONDS", default=10.0)  # whole fetch
WEB_FETCH_MAX_REDIRECTS = env.int("WEB_FETCH_MAX_REDIRECTS", default=5)  # each hop checked again
WEB_SEARCH_URL = env("WEB_SEARCH_URL", default="")  # a SearXNG instance; empty: no web_search
WEB_SEARCH_MAX_RESULTS = env.int("WEB_SEARCH_MAX_RESULTS", default=5)  # results per search, at most
WEB_SEARCH_TIMEOUT_SECONDS = env.float("WEB_SEARCH_TIMEOUT_SECONDS", default=10.0)  # per search
# Whom send_email may mail besides the user: exact addresses or "@domain", comma-separated.
MAIL_ALLOWED_RECIPIENTS = env.list("MAIL_ALLOWED_RECIPIENTS", default=[])
MAIL_FROM = env("MAIL_FROM", default="")  # send_email's sender; empty: DEFAULT_FROM_EMAIL

# --- Celery and the enqueue seam -----------------------------------------------------------------
CELERY_BROKER_URL = env("CELERY_BROKER_URL", default=REDIS_URL)
# With no broker, tasks run on an in-process thread pool after commit (config.enqueue).
INPROCESS_WORKERS = env.int("INPROCESS_WORKERS", default=4)
# Indexing documents has a queue of its own, so chats never wait behind a big document: the
# Procfile and docker-compose run a worker for it (`-Q knowledge`); with no broker, its tasks
# run on a pool of their own of this many threads (config.enqueue).
CELERY_TASK_ROUTES = {"knowledge.index_document": {"queue": "knowledge"}}
INPROCESS_QUEUE_WORKERS = {"knowledge": env.int("INPROCESS_KNOWLEDGE_WORKERS", default=1)}
# Tests may run enqueued tasks synchronously on commit.
TASKS_RUN_SYNC = env.bool("TASKS_RUN_SYNC", default=False)
# JSON logs (LOG_FORMAT=json) from workers too: Celery then leaves the root logger to LOGGING.
CELERY_WORKER_HIJACK_ROOT_LOGGER = LOG_FORMAT != "json"
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Celery closes every database connection before and after every task unless this is set: each
# task then opened a new Postgres connection and never reached the prepare threshold. Set
# (out of reach), Celery leaves them to config.celery_app, which closes them as Django does
# between requests: older than CONN_MAX_AGE, or unusable.
CELERY_DB_REUSE_MAX = 2**31
# A worker that lost Redis keeps reconnecting (the default gives up after 100 attempts and exits);
# a task already running finishes (a redelivery of a finished run is a no-op).
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
# Publishing during an outage blocks the caller at most ~2 s, then config.enqueue logs it and the
# sweeper re-sends the queued run (QUEUED_STALE_SECONDS).
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 3,
    "interval_start": 0,
    "interval_step": 0.5,
    "interval_max": 1,
}
CELERY_TIMEZONE = TIME_ZONE
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
# One model call may take OPENAI_TIMEOUT per attempt, retried OPENAI_MAX_RETRIES times (with the
# SDK's backoff, at most ~8 s between attempts). A task stops taking new steps when another call
# could overrun the soft limit, so: worst call < soft limit < hard limit < visibility timeout.
MODEL_CALL_WORST_SECONDS = OPENAI_TIMEOUT * (OPENAI_MAX_RETRIES + 1) + 8 * OPENAI_MAX_RETRIES
CELERY_TASK_SOFT_TIME_LIMIT = env.int(
    "CELERY_TASK_SOFT_TIME_LIMIT", default=int(MODEL_CALL_WORST_SECONDS * 1.5) + 30
)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=CELERY_TASK_SOFT_TIME_LIMIT + 30)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=3600),
    "socket_connect_timeout": 5,
    "socket_keepalive": True,
    "health_check_interval": 15,
}
if not (
    MODEL_CALL_WORST_SECONDS
    < CELERY_TASK_SOFT_TIME_LIMIT
    < CELERY_TASK_TIME_LIMIT
    < CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"]
):
    raise ImproperlyConfigured(
        "Time limits must nest: OPENAI_TIMEOUT x (retries + 1) < CELERY_TASK_SOFT_TIME_LIMIT "
        "< CELERY_TASK_TIME_LIMIT < CELERY_VISIBILITY_TIMEOUT"
    )

# --- Reminders, tasks and weather (docs/reminders.md) --------------------------------------------
# How often beat triggers the dispatcher; a pass sends reminders as they fall due until the next.
REMINDER_DISPATCH_SECONDS = env.float("REMINDER_DISPATCH_SECONDS", default=2.0)
REMINDER_BATCH_SIZE = env.int("REMINDER_BATCH_SIZE", default=500)  # rows claimed per transaction
REMINDER_DISPATCH_MAX_SECONDS = env.float("REMINDER_DISPATCH_MAX_SECONDS", default=20.0)  # per tick
REMINDER_MAX_ATTEMPTS = env.int("REMINDER_MAX_ATTEMPTS", default=5)  # then status failed
REMINDER_RETRY_SECONDS = env.int("REMINDER_RETRY_SECONDS", default=30)  # backoff base, doubling
REMINDER_LATE_SECONDS = env.int("REMINDER_LATE_SECONDS", default=60)  # later than this = late
# Outgoing mail (reminders on the email channel), e.g. smtp+tls://user:pass@host:587.
vars().update(env.email_url("EMAIL_URL", default="consolemail://"))
REMINDER_EMAIL_FROM = env("REMINDER_EMAIL_FROM", default="")  # set: email-channel reminders mail
REMINDER_DAY_START = env("REMINDER_DAY_START", default="09:00")  # find_free_slots default window
REMINDER_DAY_END = env("REMINDER_DAY_END", default="18:00")
REMINDER_TASK_MINUTES = env.int("REMINDER_TASK_MINUTES", default=60)  # a task with only a start
WEATHER_PROVIDER = env("WEATHER_PROVIDER", default="offline")  # or open-meteo
WEATHER_TIMEOUT = env.float("WEATHER_TIMEOUT", default=5.0)  # seconds per HTTP request
WEATHER_DEFAULT_CITY = env("WEATHER_DEFAULT_CITY", default="")  # when the model names none
WEATHER_GEOCODING_URL = env(
    "WEATHER_GEOCODING_URL", default="https://geocoding-api.open-meteo.com/v1/search"
)
WEATHER_FORECAST_URL = env("WEATHER_FORECAST_URL", default="https://api.open-meteo.com/v1/forecast")

CELERY_BEAT_SCHEDULE = {
    "sweep-runs": {"task": "delegation.sweep_runs", "schedule": SWEEP_INTERVAL_SECONDS},
    "sweep-channels": {
        "task": "chat_channels.sweep",
        "schedule": SWEEP_INTERVAL_SECONDS,
        "options": {"expires": SWEEP_INTERVAL_SECONDS},
    },
    # Beat only triggers the dispatcher; a trigger older than one interval is dropped, not queued.
    "dispatch-reminders": {
        "task": "reminders.dispatch",
        "schedule": REMINDER_DISPATCH_SECONDS,
        "options": {"expires": REMINDER_DISPATCH_SECONDS},
    },
}

# --- Watches (docs/autonomy.md) ----------------------------------------------------------
WATCH_TICK_SECONDS = env.float("WATCH_TICK_SECONDS", default=30.0)  # how often due slots are read
WATCH_LATE_SECONDS = env.int("WATCH_LATE_SECONDS", default=300)  # a check or notice later: late
CELERY_BEAT_SCHEDULE["watch-tick"] = {
    "task": "watches.tick",
    "schedule": WATCH_TICK_SECONDS,
    "options": {"expires": WATCH_TICK_SECONDS},
}

# --- Knowledge (docs/knowledge.md) ---------------------------------------------------------------
KNOWLEDGE_MAX_FILE_BYTES = env.int("KNOWLEDGE_MAX_FILE_BYTES", default=10 * 1024 * 1024)
KNOWLEDGE_CHUNK_CHARS = env.int("KNOWLEDGE_CHUNK_CHARS", default=800)  # most characters per chunk
KNOWLEDGE_CHUNK_OVERLAP = env.int("KNOWLEDGE_CHUNK_OVERLAP", default=120)  # carried to the next
KNOWLEDGE_MAX_CHUNKS = env.int("KNOWLEDGE_MAX_CHUNKS", default=5000)  # per document
KNOWLEDGE_MAX_QUERY_CHARS = env.int("KNOWLEDGE_MAX_QUERY_CHARS", default=1000)
KNOWLEDGE_MAX_TOP_K = env.int("KNOWLEDGE_MAX_TOP_K", default=20)
# What a file may unpack to, checked before it is parsed (decompression bombs): a .docx's zip
# entries together (and each PDF stream), the entries of a .docx, paragraphs (headings and
# empty ones included), PDF pages.
KNOWLEDGE_MAX_UNPACKED_BYTES = env.int("KNOWLEDGE_MAX_UNPACKED_BYTES", default=50 * 1024 * 1024)
KNOWLEDGE_MAX_ZIP_ENTRIES = env.int("KNOWLEDGE_MAX_ZIP_ENTRIES", default=1000)
# XML elements of a .docx: python-docx holds them all in memory (lxml: about 125 bytes each;
# 2 million fit in 60 KB deflated); 49,000 formatted paragraphs make about 550,000.
KNOWLEDGE_MAX_XML_ELEMENTS = env.int("KNOWLEDGE_MAX_XML_ELEMENTS", default=1_000_000)
KNOWLEDGE_MAX_PARAGRAPHS = env.int("KNOWLEDGE_MAX_PARAGRAPHS", default=50_000)
KNOWLEDGE_MAX_PDF_PAGES = env.int("KNOWLEDGE_MAX_PDF_PAGES", default=2000)
# Indexing one document stops (the document fails) after this many seconds on a Celery worker.
KNOWLEDGE_INDEX_TIME_LIMIT = env.int("KNOWLEDGE_INDEX_TIME_LIMIT", default=600)
# A document queued or indexing this long without an end was lost (a broker outage, a dead or
# missing worker): the sweeper, every KNOWLEDGE_SWEEP_SECONDS, sends it again, or after
# KNOWLEDGE_INDEX_MAX_ATTEMPTS sends marks it failed with the reason.
KNOWLEDGE_INDEX_STALE_SECONDS = env.int("KNOWLEDGE_INDEX_STALE_SECONDS", default=900)
KNOWLEDGE_INDEX_MAX_ATTEMPTS = env.int("KNOWLEDGE_INDEX_MAX_ATTEMPTS", default=2)
KNOWLEDGE_SWEEP_SECONDS = env.float("KNOWLEDGE_SWEEP_SECONDS", default=60.0)
# (+ 30: the task's hard limit; a live indexing must never be taken for a lost one)
if min(KNOWLEDGE_INDEX_STALE_SECONDS, CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"]) <= (
    KNOWLEDGE_INDEX_TIME_LIMIT + 30
):
    raise ImproperlyConfigured(
        "KNOWLEDGE_INDEX_TIME_LIMIT + 30 s (its hard limit) must be below "
        "KNOWLEDGE_INDEX_STALE_SECONDS and CELERY_VISIBILITY_TIMEOUT"
    )
if KNOWLEDGE_INDEX_MAX_ATTEMPTS < 1:
    raise ImproperlyConfigured("KNOWLEDGE_INDEX_MAX_ATTEMPTS must be 1 or more")
CELERY_BEAT_SCHEDULE["sweep-documents"] = {
    "task": "knowledge.sweep_documents",
    "schedule": KNOWLEDGE_SWEEP_SECONDS,
    "options": {"expires": KNOWLEDGE_SWEEP_SECONDS},
}
# Dense retrieval: on when a model is named; any OpenAI-compatible /v1/embeddings server.
EMBEDDINGS_MODEL = env("EMBEDDINGS_MODEL", default="")
EMBEDDINGS_BASE_URL = env("EMBEDDINGS_BASE_URL", default="")  # blank: OPENAI_BASE_URL
EMBEDDINGS_API_KEY = env("EMBEDDINGS_API_KEY", default="")  # blank: OPENAI_API_KEY
EMBEDDINGS_TIMEOUT = env.float("EMBEDDINGS_TIMEOUT", default=30.0)
EMBEDDINGS_BATCH_SIZE = env.int("EMBEDDINGS_BATCH_SIZE", default=64)  # texts per request

# --- Evals (docs/evals.md) -----------------------------------------------------------------------
# The judge that grades rubric expectations: any OpenAI-compatible server; blank values fall back
# to the agents' OPENAI_* settings. With neither a key nor a base URL, rubrics are not judged.
EVALS_JUDGE_MODEL = env("EVALS_JUDGE_MODEL", default="")  # blank: OPENAI_MODEL
EVALS_JUDGE_BASE_URL = env("EVALS_JUDGE_BASE_URL", default="")  # blank: OPENAI_BASE_URL
EVALS_JUDGE_API_KEY = env("EVALS_JUDGE_API_KEY", default="")  # blank: OPENAI_API_KEY
EVALS_JUDGE_TIMEOUT = env.float("EVALS_JUDGE_TIMEOUT", default=60.0)  # seconds per grading
# Eval turns run as sandbox users named with this prefix ("~" is refused in real usernames).
EVALS_SANDBOX_PREFIX = env("EVALS_SANDBOX_PREFIX", default="eval~")
if not EVALS_SANDBOX_PREFIX:
    raise ImproperlyConfigured("EVALS_SANDBOX_PREFIX must not be empty")
EVALS_TASK_SLICE_SECONDS = env.float("EVALS_TASK_SLICE_SECONDS", default=10.0)  # then re-queued
EVALS_LEASE_SECONDS = env.int("EVALS_LEASE_SECONDS", default=300)  # a dead task's run is retaken
EVALS_STALE_SECONDS = env.int("EVALS_STALE_SECONDS", default=60)  # a run nobody picked up: re-sent
EVALS_SWEEP_SECONDS = env.float("EVALS_SWEEP_SECONDS", default=30.0)
CELERY_BEAT_SCHEDULE["sweep-evals"] = {"task": "evals.sweep_runs", "schedule": EVALS_SWEEP_SECONDS}
# Routing statistics older than any period that reads them (docs/autonomy.md), once a day.
CELERY_BEAT_SCHEDULE["prune-routing-stats"] = {"task": "routing.prune_stats", "schedule": 86400.0}
SPECTACULAR_SETTINGS.setdefault("ENUM_NAME_OVERRIDES", {}).update(
    {
        "EvalRunStatusEnum": "delegation.evals.models.EvalRunStatus",
        "EvalCaseStatusEnum": "delegation.evals.models.CaseStatus",
        "AgentDraftStatusEnum": "delegation.evals.models.DraftStatus",
        # Every other "status" choice set gets its own name in the schema, so no two collide.
        "RunStatusEnum": "delegation.models.RunStatus",
        "MessageStatusEnum": "chat.models.MessageStatus",
        "DocumentStatusEnum": "agents.knowledge.models.DocumentStatus",
        "InboxItemStatusEnum": "delegation.humans.models.ItemStatus",
        "ReviewStatusEnum": "delegation.humans.models.ReviewStatus",
    }
)
