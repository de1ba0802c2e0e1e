"""``ssl.principal.mapping.rules``: Kafka's documented examples and its parser's edge cases,
and the RFC 2253 subject string the rules see."""

from __future__ import annotations

import pytest

from brokerd.security.ssl_principal import (
    InvalidMappingRules,
    NoMatchingRule,
    client_auth_settings,
    map_principal,
    parse_rules,
    subject_dn,
)

# The example of Kafka's security documentation ("Customizing SSL User Name").
KAFKA_DOC_RULES = ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,"
                   "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,"
                   "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,"
                   "DEFAULT")


@pytest.mark.parametrize("dn, expected", [
    ("CN=serviceuser,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", "serviceuser"),
    ("CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", "adminuser@admin"),
    ("CN=kafka1,OU=Engineering", "kafka1"),  # the third rule (lower-cased)
    ("OU=JustAnOU", "OU=JustAnOU"),  # DEFAULT: the DN itself
])
def test_kafka_documented_rules(dn: str, expected: str) -> None:
    assert map_principal(parse_rules(KAFKA_DOC_RULES), dn) == expected


def test_upper_case_flag() -> None:
    rules = parse_rules("RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/U")
    assert map_principal(rules, "CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,"
                                "C=Unknown") == "ADMINUSER@ADMIN"


def test_rules_over_several_lines_and_with_spaces() -> None:
    rules = parse_rules("  RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/ ,\n DEFAULT ")
    assert len(rules) == 2
    assert map_principal(rules, "CN=svc,OU=ServiceUsers,O=x") == "svc"


def test_escaped_slash_and_literal_back_reference() -> None:
    rules = parse_rules(r"RULE:^CN=(.*?)\/(.*)$/$2\/$1 $3/")
    assert map_principal(rules, "CN=a/b") == "b/a $3"  # $3 beyond the groups stays literal


def test_escaped_comma_in_a_name_is_matched_by_the_regex() -> None:
    rules = parse_rules(r"RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT")
    assert map_principal(rules, r"CN=Kafka\, Server,OU=ServiceUsers") == r"Kafka\, Server"


def test_the_whole_dn_must_match() -> None:
    rules = parse_rules("RULE:CN=(.*?),OU=ServiceUsers/$1/")  # no .* for the rest
    with pytest.raises(NoMatchingRule):
        map_principal(rules, "CN=svc,OU=ServiceUsers,O=Unknown")


@pytest.mark.parametrize("text", [
    "default", "DEFAUL", "DEFAULT/L", "DEFAULT/U",
    "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
    "RULE:CN=(.*?),OU=ServiceUsers.*/$1/L/U",
    "RULE:CN=(.*?),OU=ServiceUsers.*/L",
    "RULE:CN=(.*?),OU=ServiceUsers.*/U",
    "RULE:CN=(.*?),OU=ServiceUsers.*/LU",
    "DEFAULT,", "", "RULE:CN=(unclosed/$1/",
])
def test_invalid_rules_are_refused(text: str) -> None:
    with pytest.raises(InvalidMappingRules):
        parse_rules(text)


def test_subject_dn_is_rfc2253_most_specific_first() -> None:
    certificate = {"subject": ((("countryName", "GB"),), (("organizationName", "Acme, Inc"),),
                               (("organizationalUnitName", "eng"), ("userId", "7")),
                               (("commonName", " acme.orders"),))}
    assert subject_dn(certificate) == r"CN=\ acme.orders,OU=eng+UID=7,O=Acme\, Inc,C=GB"
    assert subject_dn({}) == ""


def test_client_auth_settings() -> None:
    assert not client_auth_settings({}).enabled
    settings = client_auth_settings({"ssl.client.auth": "Required",
                                     "ssl.truststore.location": "/ca.pem"})
    assert settings.mode == "required" and settings.enabled
    with pytest.raises(ValueError, match="ssl.client.auth"):
        client_auth_settings({"ssl.client.auth": "maybe"})
    with pytest.raises(ValueError, match="truststore"):
        client_auth_settings({"ssl.client.auth": "requested"})
    with pytest.raises(InvalidMappingRules, match="ssl.principal.mapping.rules"):
        client_auth_settings({"ssl.principal.mapping.rules": "nope"})
