"""Tenants: principals, API keys, client ids, topics (desired state) and the audit log.

Also their publication to ZooKeeper, where the brokers read them.
"""
