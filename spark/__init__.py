"""The monthly billing job (PySpark): a month of ``__usage`` in, invoices out.

Imports neither ``brokerd`` nor Django; talks to the brokers through the Kafka protocol
only. Modules, lowest first: ``usage`` (record format, month-of-arrival semantics),
``pricing`` (pure price rules), ``plans`` (the plans file), ``kafka_source`` (the
``kafka_range`` Spark data source), ``output`` (deterministic files), ``progress``,
``billing`` (the command line). docs/billing.md is the contract.
"""
