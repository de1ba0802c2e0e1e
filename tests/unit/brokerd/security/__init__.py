"""Unit tests for brokerd.security (authentication, ACLs, namespaces)."""
