"""The test suite: fast password hashing, a Celery queue private to this pytest worker.

Each xdist worker consumes its own queue, so a task enqueued by one worker's test is
never run by another worker's in-process Celery worker against the wrong test database.
"""

import os

from .base import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_TASK_DEFAULT_QUEUE = f"kafkasaas-test-{os.getpid()}"
DEFAULT_RF_WAIT_S = 0.0  # tests register their brokers before creating topics
ZOOKEEPER_CONNECT = os.environ.get("TEST_ZOOKEEPER", "127.0.0.1:2181") + "/kafkasaas-test"
CHANNEL_LAYERS = {  # a channel-layer namespace private to this pytest worker, like its queue
    "default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                "CONFIG": {"hosts": [CHANNEL_REDIS_HOST], "prefix": f"asgi-test-{os.getpid()}"}},  # noqa: F405
}
