"""Settings shared by every environment, read from the environment (12-factor).

| variable            | default                              | meaning                                   |
|---------------------|--------------------------------------|-------------------------------------------|
| DATABASE_URL        | sqlite:///<repo>/var/db.sqlite3      | control-plane database (SQLite or Postgres) |
| REDIS_URL           | redis://127.0.0.1:6379/0             | Celery broker and Channels layer           |
| ZOOKEEPER_CONNECT   | 127.0.0.1:2181/kafkasaas             | cluster metadata, with chroot              |
| SECRET_KEY          | (dev only default)                   | Django signing key                         |
| ALLOWED_HOSTS       | 127.0.0.1,localhost                  | comma-separated                            |
| BOOTSTRAP_SERVERS   | 127.0.0.1:9092                       | what the console shows clients             |
| CLIENT_SECURITY_PROTOCOL | SASL_SSL                        | the protocol of that (tenant) listener     |
| SSL_CA_LOCATION     | (empty: a public CA)                 | a private CA's PEM, offered for download   |
| SSL_CA_KEY_LOCATION | (empty: no client certificates)      | that CA's key: signs client certificates  |
| CLIENT_CERTIFICATE_DAYS | 365                              | validity of an issued client certificate   |
| MTLS_BOOTSTRAP_SERVERS | (empty)                           | SSL listener for certificates (console)    |
| DEFAULT_REPLICATION_FACTOR | 3                             | topics without one (at most the live brokers) |
| DEFAULT_RF_WAIT_S   | 10                                   | wait for brokers before capping the RF     |
| REASSIGNMENT_TRACK_INTERVAL_S | 2                          | how often partition moves are checked (beat) |
| TOPIC_DISCOVERY_INTERVAL_S | 2                             | topics made over Kafka: discovery (beat) |
| ACL_DISCOVERY_INTERVAL_S   | 2                             | ACLs made over Kafka: import (beat) |
| OPERATOR_BOOTSTRAP_SERVERS | BOOTSTRAP_SERVERS             | PLAINTEXT listener the admin client uses |
| BROWSER_BOOTSTRAP_SERVERS | BOOTSTRAP_SERVERS              | SASL listener the message browser reads |
| BROWSER_SECURITY_PROTOCOL | CLIENT_SECURITY_PROTOCOL       | that listener's protocol                   |
| KAFKA_ADMIN_TIMEOUT_S | 5                                  | per admin request of the control plane     |
| LAG_SNAPSHOT_INTERVAL_S | 5                                | consumer-lag snapshot period (Celery beat) |
| LAG_HISTORY_SECONDS | 900                                  | lag history kept for the charts            |
| LAG_SLO_WINDOWS     | 3600:300:14.4,21600:1800:6           | burn-rate rules (long:short seconds:rate)  |
| ALERT_RETRY_BASE_S  | 30                                   | first retry of a failed delivery (doubling) |
| ALERT_RETRY_CAP_S   | 3600                                 | longest wait between delivery retries      |
| ALERT_DELIVERY_MAX_RETRIES | 10                            | retries before a delivery is marked failed |
| ALERT_WEBHOOK_TIMEOUT_S | 10                               | per webhook attempt                        |
| COST_METER_INTERVAL_S | 30                                 | how often the cost meter reads __usage (beat) |
| COST_METER_READ_BUDGET_S | 20                              | longest a meter run reads before saving    |
| BUDGET_CHECK_INTERVAL_S | 60                               | how often budgets are evaluated (beat)     |
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from celery.schedules import crontab

BASE_DIR = Path(__file__).resolve().parents[2]
VAR_DIR = Path(os.environ.get("KAFKASAAS_VAR_DIR", BASE_DIR / "var"))

SECRET_KEY = os.environ.get("SECRET_KEY", "dev-only-insecure-key-change-me")
DEBUG = False
ALLOWED_HOSTS = [h for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost").split(",") if h]

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
    "drf_spectacular_sidecar",
    "tenants",
    "quotas",
    "dashboard",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "dashboard.middleware.ClusterUnavailableMiddleware",  # brokers/ZooKeeper down: 503, not 500
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "service.urls"
ASGI_APPLICATION = "service.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}"), conn_max_age=60
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web server and the Celery worker (lag snapshots every few seconds) write concurrently:
    # WAL lets readers go on during a write, IMMEDIATE transactions take the write lock up front
    # (a deferred one that upgrades later fails at once with "database is locked"), and writers
    # wait up to 20 s for each other instead of failing.
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
# Static files are served by WhiteNoise straight from the apps (no collectstatic step needed).
WHITENOISE_USE_FINDERS = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
LOGIN_URL = "dashboard:login"
LOGIN_REDIRECT_URL = "dashboard:home"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 100,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "kafkasaas control plane API",
    "DESCRIPTION": (
        "Tenants, principals, API keys, client ids, topics and quotas of the managed Kafka service."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
ZOOKEEPER_CONNECT = os.environ.get("ZOOKEEPER_CONNECT", "127.0.0.1:2181/kafkasaas")
BOOTSTRAP_SERVERS = os.environ.get("BOOTSTRAP_SERVERS", "127.0.0.1:9092")
CLIENT_SECURITY_PROTOCOL = os.environ.get("CLIENT_SECURITY_PROTOCOL", "SASL_SSL")
# A private CA (``make run``: scripts/certs.sh's var/certs/ca.pem), relative to the repository;
# the console offers it for download and names it in every client snippet.
SSL_CA_LOCATION = (str(BASE_DIR / os.environ["SSL_CA_LOCATION"])
                   if os.environ.get("SSL_CA_LOCATION") else "")
# The CA's private key (``make run``: var/certs/ca.key) signs tenants' client certificates
# (mTLS); empty: the control plane cannot issue them (503).
SSL_CA_KEY_LOCATION = (str(BASE_DIR / os.environ["SSL_CA_KEY_LOCATION"])
                       if os.environ.get("SSL_CA_KEY_LOCATION") else "")
CLIENT_CERTIFICATE_DAYS = int(os.environ.get("CLIENT_CERTIFICATE_DAYS", "365"))
# The brokers' SSL (mTLS) listener, shown in the console's client-certificate snippets.
MTLS_BOOTSTRAP_SERVERS = os.environ.get("MTLS_BOOTSTRAP_SERVERS", "")
# For topics created without one; a cluster with fewer live brokers (a one-broker dev or test
# setup) places them on all of its brokers instead of waiting for more.
DEFAULT_REPLICATION_FACTOR = int(os.environ.get("DEFAULT_REPLICATION_FACTOR", "3"))
# ...but only after waiting this long for more brokers (they register one by one at start-up).
DEFAULT_RF_WAIT_S = float(os.environ.get("DEFAULT_RF_WAIT_S", "10"))
# Tenant topics with at least 3 replicas get this min.insync.replicas unless the tenant sets one:
# acks=all then survives one broker down and never acknowledges a write held by a single copy.
TENANT_MIN_INSYNC_REPLICAS = 2
REASSIGNMENT_TRACK_INTERVAL_S = float(os.environ.get("REASSIGNMENT_TRACK_INTERVAL_S", "2"))
# How often Celery beat looks for topics created or deleted over the Kafka protocol.
TOPIC_DISCOVERY_INTERVAL_S = float(os.environ.get("TOPIC_DISCOVERY_INTERVAL_S", "2"))
ACL_DISCOVERY_INTERVAL_S = float(os.environ.get("ACL_DISCOVERY_INTERVAL_S", "2"))
OPERATOR_BOOTSTRAP_SERVERS = os.environ.get("OPERATOR_BOOTSTRAP_SERVERS", BOOTSTRAP_SERVERS)
# The console's message browser reads with the tenant's API key on a SASL listener the
# control plane can reach: the clients' one unless, as in docker-compose, that address
# (localhost:9292) names the host outside the control plane's container.
BROWSER_BOOTSTRAP_SERVERS = os.environ.get("BROWSER_BOOTSTRAP_SERVERS", BOOTSTRAP_SERVERS)
BROWSER_SECURITY_PROTOCOL = os.environ.get("BROWSER_SECURITY_PROTOCOL", CLIENT_SECURITY_PROTOCOL)
KAFKA_ADMIN_TIMEOUT_S = float(os.environ.get("KAFKA_ADMIN_TIMEOUT_S", "5"))
LAG_SNAPSHOT_INTERVAL_S = float(os.environ.get("LAG_SNAPSHOT_INTERVAL_S", "5"))
LAG_HISTORY_SECONDS = int(os.environ.get("LAG_HISTORY_SECONDS", "900"))
# The live cost meter reads new __usage records (issue 18 item 1); budgets check its estimate.
COST_METER_INTERVAL_S = float(os.environ.get("COST_METER_INTERVAL_S", "30"))
COST_METER_READ_BUDGET_S = float(os.environ.get("COST_METER_READ_BUDGET_S", "20"))
BUDGET_CHECK_INTERVAL_S = float(os.environ.get("BUDGET_CHECK_INTERVAL_S", "60"))
# Lag SLO alerts (dashboard.slo): the Google SRE workbook's two multiwindow burn-rate rules.
LAG_SLO_WINDOWS = os.environ.get("LAG_SLO_WINDOWS", "3600:300:14.4,21600:1800:6")
ALERT_RETRY_BASE_S = float(os.environ.get("ALERT_RETRY_BASE_S", "30"))
ALERT_RETRY_CAP_S = float(os.environ.get("ALERT_RETRY_CAP_S", "3600"))
ALERT_DELIVERY_MAX_RETRIES = int(os.environ.get("ALERT_DELIVERY_MAX_RETRIES", "10"))
ALERT_WEBHOOK_TIMEOUT_S = float(os.environ.get("ALERT_WEBHOOK_TIMEOUT_S", "10"))

# A WebSocket consumer waits for its next message with BZPOPMIN, which Redis answers after at
# most 5 s (channels_redis's brpop_timeout); redis-py 8 gives every read a 5 s socket timeout by
# default, so a wait with nothing to deliver raced the read timeout, lost, and crashed the
# consumer: daphne closed the socket (1011) and the console's live pages reconnected every few
# idle seconds ("reconnecting…" while data kept coming).  Reads may take longer than the wait.
CHANNEL_REDIS_HOST = {"address": REDIS_URL, "socket_timeout": 15}
CHANNEL_LAYERS = {
    "default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                "CONFIG": {"hosts": [CHANNEL_REDIS_HOST]}},
}

CELERY_BROKER_URL = REDIS_URL
CELERY_TASK_DEFAULT_QUEUE = "kafkasaas"
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_BEAT_SCHEDULE = {
    # 02:00 UTC on the 1st: the month has closed (late usage goes to the next invoice)
    "monthly-billing": {"task": "quotas.tasks.bill_previous_month",
                        "schedule": crontab(minute=0, hour=2, day_of_month=1)},
    # a snapshot older than one period is stale: drop it rather than run it late
    "consumer-lag-snapshot": {"task": "dashboard.tasks.snapshot_consumer_lag",
                              "schedule": LAG_SNAPSHOT_INTERVAL_S,
                              "options": {"expires": LAG_SNAPSHOT_INTERVAL_S}},
    "meter-usage": {"task": "quotas.tasks.meter_usage", "schedule": COST_METER_INTERVAL_S,
                    "options": {"expires": COST_METER_INTERVAL_S}},
    "check-budgets": {"task": "dashboard.tasks.check_budgets",
                      "schedule": BUDGET_CHECK_INTERVAL_S,
                      "options": {"expires": BUDGET_CHECK_INTERVAL_S}},
    "discover-topics": {"task": "tenants.tasks.discover_topics",
                        "schedule": TOPIC_DISCOVERY_INTERVAL_S,
                        "options": {"expires": TOPIC_DISCOVERY_INTERVAL_S}},
    "discover-acls": {"task": "tenants.tasks.discover_acls",
                      "schedule": ACL_DISCOVERY_INTERVAL_S,
                      "options": {"expires": ACL_DISCOVERY_INTERVAL_S}},
    "track-reassignments": {"task": "tenants.tasks.track_reassignments",
                            "schedule": REASSIGNMENT_TRACK_INTERVAL_S,
                            "options": {"expires": REASSIGNMENT_TRACK_INTERVAL_S}},
    # an expired certificate is refused by validity: its revocation need not stay published
    "prune-revoked-certificates": {"task": "tenants.tasks.prune_revoked_certificates",
                                   "schedule": crontab(minute=30),
                                   "options": {"expires": 3600}},
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
}
