"""Who a client certificate is: Kafka's ``ssl.principal.mapping.rules`` over the subject DN.

Kafka names an mTLS client by its certificate's subject as an RFC 2253 string (Java's
``X500Principal.getName()``: most specific attribute first, ``CN=alice,OU=eng,O=acme,C=GB``)
and then rewrites it with the first matching rule of ``ssl.principal.mapping.rules``:

- ``RULE:<regex>/<replacement>/[L|U]`` — applies when ``regex`` matches the *whole* DN; the
  DN is then rewritten with every match replaced by ``replacement`` (``$1`` … are groups;
  a ``$n`` beyond the regex's groups stays literal), and ``L``/``U`` lower-/upper-cases the
  result.  A ``/`` inside the regex or replacement is written ``\\/``; commas need no escape.
- ``DEFAULT`` — the DN itself.

Rules are separated by commas (or newlines).  A DN no rule matches cannot log in (Kafka's
``NoMatchingRule``).  Everything here is pure; the listener feeds it Python's parsed
certificate (``ssl.SSLSocket.getpeercert()``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

CLIENT_AUTH_MODES = ("none", "requested", "required")
DEFAULT_RULES = "DEFAULT"
# Java's RFC 2253 keywords for the attribute names Python's ssl module reports.
_RFC2253_KEYWORDS = {
    "commonName": "CN", "countryName": "C", "localityName": "L",
    "stateOrProvinceName": "ST", "organizationName": "O", "organizationalUnitName": "OU",
    "streetAddress": "STREET", "domainComponent": "DC", "userId": "UID",
}
_RFC2253_SPECIAL = frozenset(',+"\\<>;')
_BACK_REFERENCE = re.compile(r"\$(\d+)")


class InvalidMappingRules(ValueError):
    """``ssl.principal.mapping.rules`` does not parse; the message quotes the bad rule."""


class NoMatchingRule(LookupError):
    """No rule applies to a certificate's DN: the client cannot authenticate."""


@dataclass(frozen=True)
class MappingRule:
    """One rule; ``pattern`` None is DEFAULT."""

    pattern: re.Pattern[str] | None
    replacement: str = ""
    case: str = ""  # "", "L" or "U"

    def apply(self, dn: str) -> str | None:
        """The mapped name, or None if the rule does not apply to ``dn``."""
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        result = self.pattern.sub(self._python_replacement(), dn)
        if self.case == "L":
            return result.lower()
        return result.upper() if self.case == "U" else result

    def _python_replacement(self) -> str:
        """Java's ``$n`` back references as Python's ``\\g<n>``; other text literal."""
        groups = self.pattern.groups if self.pattern is not None else 0
        parts, position = [], 0
        for match in _BACK_REFERENCE.finditer(self.replacement):
            parts.append(self.replacement[position:match.start()].replace("\\", "\\\\"))
            number = int(match.group(1))
            parts.append(f"\\g<{number}>" if number <= groups else match.group(0))
            position = match.end()
        parts.append(self.replacement[position:].replace("\\", "\\\\"))
        return "".join(parts)


def _until_slash(text: str, start: int) -> tuple[str, int]:
    """The text from ``start`` up to the next unescaped ``/`` (``\\/`` becomes ``/``) and
    the slash's index; raises InvalidMappingRules when there is none."""
    out, index = [], start
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            following = text[index + 1]
            out.append(following if following == "/" else char + following)
            index += 2
            continue
        if char == "/":
            return "".join(out), index
        out.append(char)
        index += 1
    raise InvalidMappingRules(f"missing '/' in rule {text[start:]!r}")


def parse_rules(text: str) -> tuple[MappingRule, ...]:
    """Parse ``ssl.principal.mapping.rules``; raises :class:`InvalidMappingRules`."""
    rules: list[MappingRule] = []
    index = 0
    text = text.strip()
    while index < len(text):
        while text[index].isspace():  # text is stripped: a rule follows
            index += 1
        if text.startswith("DEFAULT", index):
            rules.append(MappingRule(None))
            index += len("DEFAULT")
        elif text.startswith("RULE:", index):
            pattern, slash = _until_slash(text, index + len("RULE:"))
            replacement, slash = _until_slash(text, slash + 1)
            index = slash + 1
            case = text[index] if index < len(text) and text[index] in "LU" else ""
            index += len(case)
            try:
                compiled = re.compile(pattern)
            except re.error as exc:
                raise InvalidMappingRules(f"rule regex {pattern!r}: {exc}") from None
            rules.append(MappingRule(compiled, replacement, case))
        else:
            raise InvalidMappingRules(f"invalid rule at {text[index:]!r}")
        while index < len(text) and text[index] in " \t":
            index += 1
        if index < len(text):
            if text[index] not in ",\n":
                raise InvalidMappingRules(f"invalid rule ending at {text[index:]!r}")
            index += 1
            if index >= len(text.rstrip()):
                raise InvalidMappingRules("a trailing separator names no rule")
    if not rules:
        raise InvalidMappingRules("no rules (use DEFAULT)")
    return tuple(rules)


def map_principal(rules: Sequence[MappingRule], dn: str) -> str:
    """The short name of ``dn`` by the first rule that applies; raises NoMatchingRule."""
    for rule in rules:
        name = rule.apply(dn)
        if name is not None:
            return name
    raise NoMatchingRule(f"no ssl.principal.mapping.rules apply to {dn!r}")


def _escape(value: str) -> str:
    """RFC 2253 section 2.4 escaping of one attribute value."""
    out = []
    for index, char in enumerate(value):
        if (char in _RFC2253_SPECIAL or (char == "#" and index == 0)
                or (char == " " and index in (0, len(value) - 1))):
            out.append("\\" + char)
        else:
            out.append(char)
    return "".join(out)


def subject_dn(certificate: Mapping[str, Any]) -> str:
    """The RFC 2253 form of a ``getpeercert()`` subject (most specific RDN first, a
    multi-valued RDN joined by ``+``); attributes Java would print as OIDs keep Python's name."""
    rdns = certificate.get("subject", ())
    return ",".join(
        "+".join(f"{_RFC2253_KEYWORDS.get(name, name)}={_escape(value)}" for name, value in rdn)
        for rdn in reversed(rdns))


@dataclass(frozen=True)
class ClientAuthSettings:
    """``ssl.client.auth`` and ``ssl.principal.mapping.rules`` of the broker."""

    mode: str = "none"
    rules: tuple[MappingRule, ...] = (MappingRule(None),)

    @property
    def enabled(self) -> bool:
        return self.mode != "none"


def client_auth_settings(props: Mapping[str, str]) -> ClientAuthSettings:
    """Parse the two keys; raises ValueError (InvalidMappingRules) naming the key."""
    mode = props.get("ssl.client.auth", "none").strip().lower()
    if mode not in CLIENT_AUTH_MODES:
        raise ValueError(f"ssl.client.auth: {mode!r} is not one of {CLIENT_AUTH_MODES}")
    try:
        rules = parse_rules(props.get("ssl.principal.mapping.rules", DEFAULT_RULES))
    except InvalidMappingRules as exc:
        raise InvalidMappingRules(f"ssl.principal.mapping.rules: {exc}") from None
    if mode != "none" and not props.get("ssl.truststore.location"):
        raise ValueError(f"ssl.client.auth={mode} needs ssl.truststore.location (the CAs "
                         "client certificates must chain to)")
    return ClientAuthSettings(mode, rules)
