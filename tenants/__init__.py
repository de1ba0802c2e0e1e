"""Tenants: plans, principals, API keys, client ids, topics, ACLs, reassignments, the audit log.

Also their publication: to ZooKeeper, where the brokers read them, and for topics as Kafka
admin requests to the brokers (which also report topics created over Kafka back).  The
lowest control-plane app: it imports no other.
"""
