"""The connection snippets name the downloadable CA wherever clients use TLS (pure text)."""

from __future__ import annotations

from dashboard.clients import CA_FILE_NAME, client_settings, snippets


def test_every_snippet_names_the_ca_file_over_tls() -> None:
    shown = snippets("kafka.example:9292", "KEY", "SECRET", ca_file=CA_FILE_NAME)
    assert set(shown) == {"confluent-kafka", "kafka-python", "kcat"}
    assert f'"ssl.ca.location": "{CA_FILE_NAME}"' in shown["confluent-kafka"]
    assert f'ssl_cafile="{CA_FILE_NAME}"' in shown["kafka-python"]
    assert f"-X ssl.ca.location={CA_FILE_NAME}" in shown["kcat"]
    for text in shown.values():
        assert "kafka.example:9292" in text and "KEY" in text and "SECRET" in text
        assert "SASL_SSL" in text and "SCRAM-SHA-512" in text


def test_no_ca_line_for_a_public_ca_or_without_tls() -> None:
    public = snippets("b:1", "KEY", "SECRET")
    plaintext = snippets("b:1", "KEY", "SECRET", security_protocol="SASL_PLAINTEXT",
                         ca_file=CA_FILE_NAME)
    for text in (*public.values(), *plaintext.values()):
        assert "ca.location" not in text and "cafile" not in text
    assert all("SASL_PLAINTEXT" in text for text in plaintext.values())


def test_the_deployment_settings_choose_protocol_and_ca(settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings.CLIENT_SECURITY_PROTOCOL = "SASL_SSL"
    settings.SSL_CA_LOCATION = ""
    assert "ca.location" not in client_settings("b:1", "K", "S")["kcat"]
    settings.SSL_CA_LOCATION = str(tmp_path / "ca.pem")
    assert CA_FILE_NAME in client_settings("b:1", "K", "S")["kcat"]


def test_the_ca_download_needs_a_private_ca(settings, tmp_path, client, django_user_model) -> None:  # type: ignore[no-untyped-def]
    client.force_login(django_user_model.objects.create_user("someone", password="pw"))
    settings.SSL_CA_LOCATION = ""
    assert client.get("/ca.pem").status_code == 404
    (tmp_path / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n")
    settings.SSL_CA_LOCATION = str(tmp_path / "ca.pem")
    settings.CLIENT_SECURITY_PROTOCOL = "SASL_SSL"
    response = client.get("/ca.pem")
    assert response.status_code == 200 and b"BEGIN CERTIFICATE" in response.content
    assert CA_FILE_NAME in response["Content-Disposition"]
