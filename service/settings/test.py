"""The test suite: fast password hashing, a Celery queue private to this pytest worker.

Each xdist worker consumes its own queue, so a task enqueued by one worker's test is
never run by another worker's in-process Celery worker against the wrong test database.
"""

import os
import tempfile

from .base import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_TASK_DEFAULT_QUEUE = f"kafkasaas-test-{os.getpid()}"
DEFAULT_RF_WAIT_S = 0.0  # tests register their brokers before creating topics
ZOOKEEPER_CONNECT = os.environ.get("TEST_ZOOKEEPER", "127.0.0.1:2181") + "/kafkasaas-test"
CHANNEL_LAYERS = {  # a channel-layer namespace private to this pytest worker, like its queue
    "default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                "CONFIG": {"hosts": [CHANNEL_REDIS_HOST], "prefix": f"asgi-test-{os.getpid()}"}},  # noqa: F405
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    # A file rather than Django's default in-memory test database: that one is shared
    # between threads through SQLite's shared cache, whose table locks fail at once
    # ("database table is locked") whatever the timeout, and tests whose Celery worker
    # thread writes while a request does failed that way.  A file in WAL mode makes the
    # writers wait for each other (base settings' timeout) as the real service does.
    DATABASES["default"]["TEST"] = {  # noqa: F405
        "NAME": os.path.join(tempfile.gettempdir(), f"kafkasaas-test-{os.getpid()}.sqlite3")}
