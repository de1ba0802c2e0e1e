"""Kafka quota overrides (published to ZooKeeper for the brokers), invoices and billing.

Above ``tenants`` (whose plans, tenants and principals it uses); ``tenants`` never imports it.
"""
