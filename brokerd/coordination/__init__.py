"""Cluster coordination through ZooKeeper — the only package that imports kazoo.

``znodes`` (paths and Kafka's JSON formats), ``assignment`` (pure placement rules),
``election`` (the controller's pure leadership rules), ``writes`` (conditional and fenced
updates), ``topic_cache`` (watched, per-partition topic reads), ``isr_writes`` (leaders'
batched ISR writes), ``controller`` (the controller's duties) and ``zk`` (the session:
registration, controller election, watches, the async API)."""
