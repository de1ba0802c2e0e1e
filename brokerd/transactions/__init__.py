"""The transaction coordinator: transactional ids, their producer epochs and the
two-phase commit of their transactions (Kafka's design; see docs/brokerd.md).

The leader of ``__transaction_state`` partition ``partition_for(transactional_id)``
coordinates an id.  Modules, each importing only those listed before it (plus
``brokerd.protocol`` and the groups' hashing and log adapter):

- ``config``: settings and their Kafka defaults, the topic's name and configs.
- ``state``: the pure state machine (Empty, Ongoing, Prepare*, Complete*) and its
  fencing rules; every API is a function returning a decision.
- ``records``: the byte formats of ``__transaction_state`` keys and values.
- ``coordinator``: the asyncio :class:`TransactionCoordinator` (persist, then adopt;
  markers; timeouts; reload by replay).
"""

from brokerd.transactions.config import TRANSACTION_STATE_TOPIC, TxnConfig
from brokerd.transactions.coordinator import MarkerWriter, TransactionCoordinator

__all__ = ["TRANSACTION_STATE_TOPIC", "MarkerWriter", "TransactionCoordinator", "TxnConfig"]
