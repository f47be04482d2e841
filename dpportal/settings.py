"""Settings, read from the environment.

Two shapes of the same product:

* embedded default (nothing set): SQLite under ./var, a Celery broker on kombu's
  filesystem transport (no server needed, yet a real worker process), local
  memory cache. For the one-command demo only.
* full stack: DATABASE_URL (PostgreSQL through psycopg 3) and REDIS_URL (Celery
  broker and result backend, Django cache). CI and production run this.

Outside DEBUG the settings fail closed: no SECRET_KEY, no start.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return default if value in (None, "") else int(value)


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


DEBUG = env_bool("DEBUG", False)
VAR_DIR = Path(os.environ.get("DPPORTAL_VAR_DIR", BASE_DIR / "var"))

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = "insecure-development-key-only-for-DEBUG"  # noqa: S105

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files from our static files, not a CDN
    "csp",
    "accounts",
    "budgets",
    "datasets",
    "releases",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # a public page its view offered (release page, data.json, record.json, registry
    # JSON) answered from the cache as the stack below finished it, when the request
    # carries nothing that changes it: no session, no query (dpportal/public_cache.py)
    "dpportal.public_cache.PublicAnswerMiddleware",
    # HTML and JSON compressed too (static files arrive compressed from whitenoise,
    # which answers before this). BREACH: Django's GZipMiddleware pads every response
    # with random bytes ("Heal the Breach") and CSRF tokens are masked per response;
    # the pages carry no other secret (session cookies are headers, never compressed).
    "django.middleware.gzip.GZipMiddleware",
    "dpportal.middleware.MalformedSessionCookieMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # after sessions, before common (Django's documented place): the language comes from
    # the cookie set by the switcher, else the reader's Accept-Language, else English
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "dpportal.middleware.ApplicationErrorMiddleware",
]

ROOT_URLCONF = "dpportal.urls"
WSGI_APPLICATION = "dpportal.wsgi.application"

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
            ],
            # numbers for people: {% load dpformat %} (dpportal/formatting.py)
            "libraries": {
                "dpformat": "dpportal.templatetags.dpformat",
                "dpwords": "dpportal.templatetags.dpwords",
            },
        },
    },
]

# --- database -----------------------------------------------------------------
DATABASE_URL = os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'dpportal.sqlite3'}"
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A worker and the web server share the file: wait for locks rather than fail.
    DATABASES["default"]["OPTIONS"] = {"timeout": 30, "transaction_mode": "IMMEDIATE"}
    DATABASES["default"]["CONN_MAX_AGE"] = 0
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- redis: broker, results, cache ----------------------------------------------
REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_RESULT_BACKEND = REDIS_URL
    # Redis is a cache, never a dependency of a read: a Redis error is a cache miss
    # (dpportal/cache.py), and a Redis that is down costs milliseconds, not seconds.
    CACHES = {
        "default": {
            "BACKEND": "dpportal.cache.FallbackRedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": os.environ.get("CACHE_KEY_PREFIX", "dpportal"),
            "OPTIONS": {"socket_connect_timeout": 0.25, "socket_timeout": 1.0},
        }
    }
else:
    _broker_dir = VAR_DIR / "broker"
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "out"),
        "data_folder_out": str(_broker_dir / "out"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
    CELERY_RESULT_BACKEND = None
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

CELERY_TASK_DEFAULT_QUEUE = os.environ.get("CELERY_QUEUE", "dpportal")
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_RESULT_EXPIRES = 3600
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A broker that is down must not hang the web request that enqueues: the periodic
# re-dispatch picks up whatever stayed queued.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    **globals().get("CELERY_BROKER_TRANSPORT_OPTIONS", {}),
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.5,
}
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_REDIS_SOCKET_TIMEOUT = 5
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

# Recovery from a worker that died mid-computation (releases.lifecycle): the computing
# worker writes a heartbeat every few seconds; a release silent for the stall threshold
# is shown as "worker lost, resuming" and sent again by the periodic re-dispatch.
DPPORTAL_COMPUTE_HEARTBEAT_SECONDS = env_int("DPPORTAL_COMPUTE_HEARTBEAT_SECONDS", 5)
DPPORTAL_COMPUTE_STALLED_AFTER_SECONDS = env_int("DPPORTAL_COMPUTE_STALLED_AFTER_SECONDS", 60)
# DuckDB in the worker (releases.compute.duckdb_engine): threads (0: every core) and the
# memory limit past which it spills to disk
DPPORTAL_COMPUTE_THREADS = env_int("DPPORTAL_COMPUTE_THREADS", 0)
DPPORTAL_COMPUTE_MEMORY_MB = env_int("DPPORTAL_COMPUTE_MEMORY_MB", 192)
DPPORTAL_REDISPATCH_SECONDS = env_int("DPPORTAL_REDISPATCH_SECONDS", 15)
if DPPORTAL_COMPUTE_STALLED_AFTER_SECONDS < 3 * DPPORTAL_COMPUTE_HEARTBEAT_SECONDS:
    raise ImproperlyConfigured(
        "DPPORTAL_COMPUTE_STALLED_AFTER_SECONDS must be at least three heartbeats."
    )
CELERY_BEAT_SCHEDULE: dict = {}
# Releases left queued (broker down at approval) or whose worker was lost are sent again.
CELERY_BEAT_SCHEDULE["releases-redispatch-stale"] = {
    "task": "releases.redispatch_stale",
    "schedule": float(DPPORTAL_REDISPATCH_SECONDS),
}
# Datasets left uploaded (broker down at upload) or stalled mid-ingest are sent again.
CELERY_BEAT_SCHEDULE["datasets-redispatch-stale"] = {
    "task": "datasets.redispatch_stale",
    "schedule": 60.0,
}
# Failed uploads are removed once DPPORTAL_FAILED_UPLOAD_RETENTION_DAYS have passed.
CELERY_BEAT_SCHEDULE["datasets-cleanup-failed"] = {
    "task": "datasets.cleanup_failed",
    "schedule": 3600.0,
}
# Uploads never confirmed (status awaiting) are removed with their private file
# after DPPORTAL_AWAITING_UPLOAD_RETENTION_HOURS.
CELERY_BEAT_SCHEDULE["datasets-cleanup-awaiting"] = {
    "task": "datasets.cleanup_awaiting",
    "schedule": 3600.0,
}
if REDIS_URL:
    # Redis redelivers an unacknowledged message (acks_late: its worker died) once it is
    # this old; a live worker restores such messages about every 100 s (kombu). Twice the
    # stall threshold: the heartbeat re-dispatch is the fast path, this the backstop when
    # beat is not running. A long computation still running when its message is
    # redelivered is not computed twice: the second delivery finds the first one's
    # advisory lock held (or its results stored) and does nothing. Every countdown of a
    # retry (at most 32 s) stays below it, so delayed retries are not duplicated.
    CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"] = env_int(
        "CELERY_VISIBILITY_TIMEOUT", 2 * DPPORTAL_COMPUTE_STALLED_AFTER_SECONDS
    )
# Compute tasks retry after base * 2**attempt seconds (2, 4, 8, 16, 32 by default).
DPPORTAL_COMPUTE_RETRY_BASE_SECONDS = env_int("DPPORTAL_COMPUTE_RETRY_BASE_SECONDS", 2)
# Spark (releases.compute.spark_engine): the master URL ("" = no cluster: a dataset on
# "auto" stays on DuckDB; one marked "spark" runs on local[*]); "auto" uses Spark only
# when a master is set and the dataset has at least DPPORTAL_SPARK_MIN_ROWS rows
DPPORTAL_SPARK_MASTER = os.environ.get("DPPORTAL_SPARK_MASTER", "")
DPPORTAL_SPARK_MIN_ROWS = env_int("DPPORTAL_SPARK_MIN_ROWS", 100_000_000)
# 0: 4 per core of a local master, 16 on a cluster (spark_engine.session_conf)
DPPORTAL_SPARK_SHUFFLE_PARTITIONS = env_int("DPPORTAL_SPARK_SHUFFLE_PARTITIONS", 0)

# --- files ----------------------------------------------------------------------
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT", VAR_DIR / "media"))
MEDIA_URL = "/media/"  # never served publicly: datasets are private
DPPORTAL_MAX_UPLOAD_BYTES = env_int("DPPORTAL_MAX_UPLOAD_BYTES", 512 * 1024 * 1024)
# A gzip upload may expand to at most RATIO times its size, and never past the absolute cap.
DPPORTAL_MAX_DECOMPRESSED_BYTES = env_int("DPPORTAL_MAX_DECOMPRESSED_BYTES", 1024**3)
DPPORTAL_MAX_DECOMPRESSION_RATIO = env_int("DPPORTAL_MAX_DECOMPRESSION_RATIO", 100)
DPPORTAL_MAX_ROW_BYTES = env_int("DPPORTAL_MAX_ROW_BYTES", 1024**2)
DPPORTAL_MAX_COLUMNS = env_int("DPPORTAL_MAX_COLUMNS", 200)
# Data rows of an Excel sheet (below Excel's own 1,048,575, so a full sheet is refused).
DPPORTAL_MAX_SHEET_ROWS = env_int("DPPORTAL_MAX_SHEET_ROWS", 1_000_000)
# Failed uploads (their reason; their files are removed at once) are kept this long.
DPPORTAL_FAILED_UPLOAD_RETENTION_DAYS = env_int("DPPORTAL_FAILED_UPLOAD_RETENTION_DAYS", 7)
DPPORTAL_AWAITING_UPLOAD_RETENTION_HOURS = env_int("DPPORTAL_AWAITING_UPLOAD_RETENTION_HOURS", 24)
DATA_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
# Where dataset Parquet files live (datasets/storage.py): "local" (under MEDIA_ROOT,
# the embedded default) or "s3" (an S3-compatible bucket: AWS, MinIO, ...). With s3,
# the bucket must exist; credentials left empty fall back to the usual AWS chain.
DPPORTAL_STORAGE = os.environ.get("DPPORTAL_STORAGE", "local").strip().lower()
if DPPORTAL_STORAGE not in ("local", "s3"):
    raise ImproperlyConfigured("DPPORTAL_STORAGE must be 'local' or 's3'.")
DPPORTAL_S3_ENDPOINT_URL = os.environ.get("DPPORTAL_S3_ENDPOINT_URL", "")  # e.g. http://minio:9000
DPPORTAL_S3_BUCKET = os.environ.get("DPPORTAL_S3_BUCKET", "")
DPPORTAL_S3_PREFIX = os.environ.get("DPPORTAL_S3_PREFIX", "")  # key prefix inside the bucket
DPPORTAL_S3_REGION = os.environ.get("DPPORTAL_S3_REGION", "us-east-1")
# Local folders whose Parquet an owner with datasets.register_external may register in
# place (read-only); empty (the default) turns local registration off. s3:// locations
# are read with the DPPORTAL_S3_* endpoint and credentials.
DPPORTAL_EXTERNAL_ROOTS = env_list("DPPORTAL_EXTERNAL_ROOTS", [])
DPPORTAL_S3_ACCESS_KEY_ID = os.environ.get("DPPORTAL_S3_ACCESS_KEY_ID", "")
DPPORTAL_S3_SECRET_ACCESS_KEY = os.environ.get("DPPORTAL_S3_SECRET_ACCESS_KEY", "")
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440

STATIC_URL = "/static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", VAR_DIR / "static"))
# plotly.js is ours too: a partial bundle of the traces the pages draw, vendored under
# static/vendor/plotly (README.md there; scripts/build-plotly-bundle.sh rebuilds it).
STATICFILES_DIRS = [BASE_DIR / "static"]
# Static files are served by whitenoise from STATIC_ROOT, collected by `collectstatic`:
# compressed (gzip) and with content-hashed names cached for a year. That is every
# mode that serves people: production and `scripts/run.sh` (which collects first and
# runs runserver with --nostatic). Only a developer's own `runserver` or the test
# suite, with DEBUG and DPPORTAL_STATIC_COLLECTED=0, read the source folders as is.
STATIC_COLLECTED = env_bool("DPPORTAL_STATIC_COLLECTED", not DEBUG)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "dpportal.staticfiles.HashedStaticFilesStorage"
        if STATIC_COLLECTED
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = not STATIC_COLLECTED
WHITENOISE_AUTOREFRESH = DEBUG and not STATIC_COLLECTED

# --- auth -------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Sessions live in the database, never only in the cache: logging in and staying
# logged in must not depend on Redis.
SESSION_ENGINE = "django.contrib.sessions.backends.db"
# API tokens expire this many days after they were issued (then 401, obtain a new one).
DPPORTAL_TOKEN_LIFETIME = timedelta(days=env_int("DPPORTAL_TOKEN_LIFETIME_DAYS", 30))
# Reverse proxies in front of the app that append the client address to
# X-Forwarded-For. 0 (the default): the header is ignored and the connection's
# address is the client's; with N, the N-th address from the right is.
DPPORTAL_TRUSTED_PROXIES = env_int("DPPORTAL_TRUSTED_PROXIES", 0)
# The organisation publishing the projects' data, as an OpenDP Deployments Registry entry
# names its curator (budgets.selectors.deployment_entry); empty: "not stated".
DPPORTAL_DATA_CURATOR = os.environ.get("DPPORTAL_DATA_CURATOR", "").strip()
LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "accounts:home"
LOGOUT_REDIRECT_URL = "public:home"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
# Issue 17: English and Simplified Chinese. Catalogues in locale/ (the .po in the repo,
# the .mo compiled by `python -m dpportal.catalogues` at install); terms in locale/glossary.csv.
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
# dates and number separators per language (dpportal/formats/<lang>/formats.py)
FORMAT_MODULE_PATH = ["dpportal.formats"]
LOCALE_PATHS = [BASE_DIR / "locale"]
# The switcher's choice is remembered for a year, for anonymous readers too.
LANGUAGE_COOKIE_AGE = 365 * 24 * 3600
LANGUAGE_COOKIE_SAMESITE = "Lax"
USE_TZ = True

# --- REST API -----------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_THROTTLE_RATES": {
        "anon": os.environ.get("API_ANON_THROTTLE", "120/minute"),
        # logging in (the page and the token endpoint): every attempt from one address,
        # a quick check in the cache while Redis is up; the limits that hold without
        # it are in the database (the "login" block below, accounts/throttling.py)
        "login_address": os.environ.get("DPPORTAL_LOGIN_ADDRESS_RATE", "30/minute"),
    },
    # Throttles identify clients by address: X-Forwarded-For only through trusted proxies.
    "NUM_PROXIES": DPPORTAL_TRUSTED_PROXIES,
    "EXCEPTION_HANDLER": "dpportal.api.errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "dpportal API",
    "DESCRIPTION": "Differentially private statistics: datasets, releases, budgets, registry.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    # Django's slug converter, stated in the schema (clients and fuzzers see the rule).
    "PATH_CONVERTER_OVERRIDES": {"slug": {"type": "string", "pattern": "^[-a-zA-Z0-9_]+$"}},
    "ENUM_NAME_OVERRIDES": {
        "DatasetStatusEnum": "datasets.models.Dataset.Status",
        "ReleaseStatusEnum": "releases.models.Release.Status",
        "MechanismEnum": "releases.models.Release.Mechanism",
        "StatisticKindEnum": "releases.models.Statistic.Kind",
        "ColumnKindEnum": "datasets.models.Column.Kind",
        "DeclaredKindEnum": ["categorical", "numeric", "excluded"],
    },
}

# --- security (production fails closed; see `manage.py check --deploy`) --------------
# Behind a TLS-terminating proxy, name the header it sets (e.g. X-Forwarded-Proto):
# a request is then taken as HTTPS when that header says "https". Unset: no header
# is trusted (a client could send it), which is right when gunicorn faces clients.
_proxy_ssl_header = os.environ.get("SECURE_PROXY_SSL_HEADER", "").strip()
if _proxy_ssl_header:
    SECURE_PROXY_SSL_HEADER = (
        "HTTP_" + _proxy_ssl_header.upper().replace("-", "_").removeprefix("HTTP_"),
        "https",
    )
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
LANGUAGE_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
# The header only consents to preloading; submitting the domain stays the operator's act.
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", not DEBUG)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True

# Content-Security-Policy on every response (django-csp). Scripts only from our own
# static files: no inline <script> anywhere (pages pass data with json_script to a
# static file), no eval, no plugins, no <base> rewriting, no framing (clickjacking),
# forms post only to us. Style sheets only from our static files, and no inline style
# at all: no <style> element and no style attribute in markup (scripts may still set
# styles through the CSSOM). The budget bars are SVG rects whose widths are
# attributes; plotly.js finds its global rules already linked as a static sheet
# (static/vendor/plotly/plotly-global.css, #plotly.js-style-global.no-inline-styles)
# and creates no <style> element. Images may be data: URIs (icons in CSS).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "style-src-elem": ["'self'"],
        "style-src-attr": ["'none'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {
            # An exception is written as its type and place, never its message or a
            # traceback (which might quote data): dpportal/logsafe.py.
            "class": "dpportal.logsafe.SummaryFormatter",
            "format": "%(asctime)s %(levelname)s %(name)s: %(message)s",
        }
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
}

# --- Registering data in place (datasets/locations.py, datasets/checks.py) -------------
# The most files and folders (S3: keys) the worker lists at one registered location;
# listing stops at the next one and the dataset fails with a message naming the limit.
DPPORTAL_EXTERNAL_MAX_FILES = env_int("DPPORTAL_EXTERNAL_MAX_FILES", 10_000)
# s3://bucket/prefix/ locations that may be registered (comma-separated); empty (the
# default) allows any bucket the DPPORTAL_S3_* credentials reach. dpportal's own
# storage (DPPORTAL_S3_BUCKET under DPPORTAL_S3_PREFIX) is refused either way.
DPPORTAL_EXTERNAL_S3_ROOTS = env_list("DPPORTAL_EXTERNAL_S3_ROOTS", [])

# --- Excel (.xlsx) ingest budget -------------------------------------------
# Cells (rows times columns) read from one sheet: bounds the worker's time (openpyxl reads
# 60,000 to 150,000 cells a second through the whole ingest on a busy two-core machine:
# 2 million take 15 to 35 s).
DPPORTAL_XLSX_MAX_CELLS = env_int("DPPORTAL_XLSX_MAX_CELLS", 2_000_000)
# Any part of the container other than its sheets and shared strings (styles, workbook,
# relationships), decompressed: these are parsed whole.
DPPORTAL_XLSX_MAX_PART_BYTES = env_int("DPPORTAL_XLSX_MAX_PART_BYTES", 16 * 1024**2)
# Distinct text values (shared strings), held in memory while the sheet is read.
DPPORTAL_XLSX_MAX_SHARED_STRINGS = env_int("DPPORTAL_XLSX_MAX_SHARED_STRINGS", 1_000_000)
# The shared strings part decompressed, and the strings' size in memory.
DPPORTAL_XLSX_MAX_SHARED_STRINGS_BYTES = env_int(
    "DPPORTAL_XLSX_MAX_SHARED_STRINGS_BYTES", 64 * 1024**2
)

# --- login: failed logins in the database (django-axes; accounts/throttling.py) ------
# Every failed login (the login page, the admin's, the API token endpoint) is a row in
# the database, written by axes' user_login_failed receiver: the limits hold while
# Redis is down and survive its restart. Before any password is tried:
# * DPPORTAL_LOGIN_FAILURE_LIMIT failures for one username from one client address
#   lock that pair (even the right password is refused) for
#   DPPORTAL_LOGIN_LOCKOUT_MINUTES after its last failure;
# * from DPPORTAL_LOGIN_SLOW_AFTER failures for one username from any addresses in
#   that window, each next attempt for it waits DPPORTAL_LOGIN_SLOW_FIRST_SECONDS
#   after the last failure, doubling per further failure up to
#   DPPORTAL_LOGIN_SLOW_MAX_SECONDS: slowed, so a stranger cannot lock anyone out;
# * the same slowing for one address's failures over all usernames, from
#   DPPORTAL_LOGIN_ADDRESS_SLOW_AFTER on.
INSTALLED_APPS += ["axes"]
DPPORTAL_LOGIN_FAILURE_LIMIT = env_int("DPPORTAL_LOGIN_FAILURE_LIMIT", 10)
DPPORTAL_LOGIN_LOCKOUT_MINUTES = env_int("DPPORTAL_LOGIN_LOCKOUT_MINUTES", 60)
DPPORTAL_LOGIN_SLOW_AFTER = env_int("DPPORTAL_LOGIN_SLOW_AFTER", 10)
DPPORTAL_LOGIN_ADDRESS_SLOW_AFTER = env_int("DPPORTAL_LOGIN_ADDRESS_SLOW_AFTER", 30)
DPPORTAL_LOGIN_SLOW_FIRST_SECONDS = env_int("DPPORTAL_LOGIN_SLOW_FIRST_SECONDS", 5)
DPPORTAL_LOGIN_SLOW_MAX_SECONDS = env_int("DPPORTAL_LOGIN_SLOW_MAX_SECONDS", 120)
for _name in (
    "DPPORTAL_LOGIN_FAILURE_LIMIT",
    "DPPORTAL_LOGIN_LOCKOUT_MINUTES",
    "DPPORTAL_LOGIN_SLOW_AFTER",
    "DPPORTAL_LOGIN_ADDRESS_SLOW_AFTER",
    "DPPORTAL_LOGIN_SLOW_FIRST_SECONDS",
):
    if globals()[_name] < 1:
        raise ImproperlyConfigured(f"{_name} must be at least 1.")
if DPPORTAL_LOGIN_SLOW_MAX_SECONDS < DPPORTAL_LOGIN_SLOW_FIRST_SECONDS:
    raise ImproperlyConfigured(
        "DPPORTAL_LOGIN_SLOW_MAX_SECONDS must be at least DPPORTAL_LOGIN_SLOW_FIRST_SECONDS."
    )
AXES_HANDLER = "axes.handlers.database.AxesDatabaseHandler"
AXES_FAILURE_LIMIT = DPPORTAL_LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(minutes=DPPORTAL_LOGIN_LOCKOUT_MINUTES)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# the throttles' address: X-Forwarded-For only through DPPORTAL_TRUSTED_PROXIES
AXES_CLIENT_IP_CALLABLE = "accounts.throttling.client_address"
# a successful login clears its own pair's failures (not other addresses')
AXES_RESET_ON_SUCCESS = True
# failures only: successful logins are not logged (nothing needs that record)
AXES_DISABLE_ACCESS_LOG = True
AXES_VERBOSE = False
# A locked pair is refused by the first backend too, for any path that authenticates
# with a request; the login paths ask before trying the password and answer 429.
AUTHENTICATION_BACKENDS = [
    "accounts.backends.LoginLimitBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Marks the answer to the failure that locks a pair (AXES_LOCKOUT_CALLABLE: a 429
# with the lock's message and Retry-After); a refused attempt is never recorded, so
# it cannot extend the lock.
MIDDLEWARE += ["axes.middleware.AxesMiddleware"]
AXES_LOCKOUT_CALLABLE = "accounts.throttling.lockout_response"
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False

# --- ops: task time limits --------------------------------------------------------
# Every Celery task has a soft time limit (seconds): past it the task stops, records
# which limit it reached on the dataset or release (dpportal.tasklimits), and is not
# retried. The hard limit, DPPORTAL_TASK_HARD_LIMIT_GRACE_SECONDS later, kills the pool
# process of a task stuck in native code that never returns to Python to be stopped.
# Soft limits need the prefork pool (the default), not --pool=solo or threads.
DPPORTAL_INGEST_SOFT_TIME_LIMIT = env_int("DPPORTAL_INGEST_SOFT_TIME_LIMIT", 20 * 60)
DPPORTAL_COMPUTE_SOFT_TIME_LIMIT = env_int("DPPORTAL_COMPUTE_SOFT_TIME_LIMIT", 30 * 60)
DPPORTAL_PERSON_ROWS_SOFT_TIME_LIMIT = env_int("DPPORTAL_PERSON_ROWS_SOFT_TIME_LIMIT", 30 * 60)
# the periodic re-dispatch and clean-up tasks (they resume where they stopped next run)
DPPORTAL_MAINTENANCE_SOFT_TIME_LIMIT = env_int("DPPORTAL_MAINTENANCE_SOFT_TIME_LIMIT", 5 * 60)
DPPORTAL_TASK_HARD_LIMIT_GRACE_SECONDS = env_int("DPPORTAL_TASK_HARD_LIMIT_GRACE_SECONDS", 60)

# --- Cells per statistic and per release (bounded result pages) ---------------------
# A cell is one released value times the noise parts read back for it
# (releases.kinds.base.StatisticKind.cell_count). Every surface of a result (public
# page, data.json, data.csv, the owner's results) reads each cell, so these bound
# the cost of every page; the builder shows them and refuses a plan over them.
RELEASE_MAX_CELLS_PER_STATISTIC = env_int("RELEASE_MAX_CELLS_PER_STATISTIC", 10_000)
# the largest "most rows per person to resolve" a rows-per-person statistic may ask for
RELEASE_ROWS_PER_PERSON_MAX_CAP = env_int("RELEASE_ROWS_PER_PERSON_MAX_CAP", 100_000)
# the owner's private check of a draft (releases.private_check): run in the request, so
# bounded by rows (refused past it before reading) and by DuckDB time (interrupted)
DPPORTAL_PRIVATE_CHECK_MAX_ROWS = env_int("DPPORTAL_PRIVATE_CHECK_MAX_ROWS", 10_000_000)
DPPORTAL_PRIVATE_CHECK_SECONDS = env_int("DPPORTAL_PRIVATE_CHECK_SECONDS", 20)
RELEASE_MAX_CELLS_PER_RELEASE = env_int("RELEASE_MAX_CELLS_PER_RELEASE", 20_000)
# Lower limits for the kinds whose intervals are dear to read back, each for one
# statistic and for all of that kind in one release (measured with
# bench/largest_release.py: a page computes every cell's interval at 3 levels x 2
# kinds): standard deviations and variances invert a joint law of three noise
# parts (dpportal/privacy/spread_interval.py, ~5 ms a cell); grouped means invert a
# pivot per group (dpportal/privacy/mean_pivot.py, ~1.3 ms a cell).
RELEASE_MAX_SPREAD_CELLS = env_int("RELEASE_MAX_SPREAD_CELLS", 150)
RELEASE_MAX_GROUPED_MEAN_CELLS = env_int("RELEASE_MAX_GROUPED_MEAN_CELLS", 600)
# Keys found in the data (partition selection): at most this many published keys per
# statistic (the owner may ask for fewer; when more pass the threshold, those with the
# largest noisy counts are kept, post-processing); a key longer than
# RELEASE_KEYS_MAX_KEY_CHARS characters is cut to that length before it is counted (a
# per-row transformation, so the count stays of persons). Distinct keys held while
# counting are bounded by the dataset's rows and decompressed bytes, never a cap the
# data could make a computation fail on.
RELEASE_KEYS_MAX_SHOWN = env_int("RELEASE_KEYS_MAX_SHOWN", 1000)
RELEASE_KEYS_MAX_KEY_CHARS = env_int("RELEASE_KEYS_MAX_KEY_CHARS", 200)
# cells of one statistic on one HTML page (public page, owner's results): a longer
# statistic is paged ("page 1 of N"; a two-way table shows whole rows, at least one);
# data.csv and data.json hold every cell
RESULT_PAGE_CELLS = env_int("RESULT_PAGE_CELLS", 300)

# --- Bounded reading of Parquet and statistical files (binary formats) -------------
# Parquet, Stata, SPSS and SAS rows are read and written in batches of about this many
# decoded bytes (the rows per batch follow from the row width the file declares), so a
# small file that decodes to gigabytes never sits in memory whole. Their total decoded
# size is held to DPPORTAL_MAX_DECOMPRESSED_BYTES and each value to DPPORTAL_MAX_ROW_BYTES.
DPPORTAL_INGEST_BATCH_BYTES = env_int("DPPORTAL_INGEST_BATCH_BYTES", 16 * 1024**2)
# pyarrow decompresses a Parquet page whole, and the footer does not say how large the
# pages are: a large column chunk's page headers are read, and a page may hold at most
# this much uncompressed (writers make pages of about 1 MiB).
DPPORTAL_PARQUET_MAX_PAGE_BYTES = env_int("DPPORTAL_PARQUET_MAX_PAGE_BYTES", 16 * 1024**2)
