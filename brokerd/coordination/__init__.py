"""Cluster coordination through ZooKeeper — the only package that imports kazoo.

``znodes`` (paths and Kafka's JSON formats), ``assignment`` (pure placement rules),
``writes`` (conditional updates) and ``zk`` (the session: registration, controller,
watches)."""
