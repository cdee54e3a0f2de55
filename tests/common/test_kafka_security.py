"""Your own Kafka cluster's security settings: the environment mapped to Spark's options,
kafka-python's and confluent-kafka's arguments, the combinations refused, nothing applied to the
course's own broker, and the password in no message.

Pure Python, with the environment passed in, except two checks: Kafka's own parser reads the login
setting back (the session's JVM), and an explicit PLAINTEXT still reads a topic (the test run's
broker).
"""

from __future__ import annotations

import json

import pytest

from common import config
from conftest import load_lesson
from data_generators import kafka_producer
from infra import kafka_security
from infra.errors import CourseError
from infra.kafka import consume_all, ensure_topics
from infra.kafka_security import (
    client_options,
    jaas_config,
    librdkafka_options,
    read_security,
    spark_options,
)

CLUSTER = "broker-1.example.net:9096,broker-2.example.net:9096"
PASSWORD = 'pa"ss\\w0rd-9c1e'  # a quote and a backslash: the login setting must escape both
PLAIN_LOGIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule"
pytestmark = [
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning"),
]


@pytest.fixture(autouse=True)
def no_notes_yet(monkeypatch):
    monkeypatch.setattr(kafka_security, "_noted", set())


def cluster(**variables: str) -> dict[str, str]:
    """An environment with KAFKA_BOOTSTRAP_SERVERS=CLUSTER and KAFKA_<name>=value for each
    keyword."""
    return {
        config.KAFKA_BOOTSTRAP_ENV: CLUSTER,
        **{f"KAFKA_{name}": value for name, value in variables.items()},
    }


def sasl(mechanism: str = "PLAIN", protocol: str = "SASL_SSL", **more: str) -> dict[str, str]:
    return cluster(
        SECURITY_PROTOCOL=protocol,
        SASL_MECHANISM=mechanism,
        SASL_USERNAME="api-key",
        SASL_PASSWORD=PASSWORD,
        **more,
    )


# --- the mapping ----------------------------------------------------------------------------------


def test_without_security_variables_every_client_gets_the_address_only():
    assert spark_options(CLUSTER, cluster()) == {"kafka.bootstrap.servers": CLUSTER}
    assert client_options(CLUSTER, cluster()) == {"bootstrap_servers": CLUSTER}
    assert librdkafka_options(CLUSTER, cluster()) == {"bootstrap.servers": CLUSTER}


@pytest.mark.parametrize(
    "mechanism, module",
    [("PLAIN", PLAIN_LOGIN), ("SCRAM-SHA-256", SCRAM_LOGIN), ("SCRAM-SHA-512", SCRAM_LOGIN)],
)
def test_a_sasl_login_reaches_all_three_clients(mechanism, module):
    environ = sasl(mechanism)
    assert spark_options(CLUSTER, environ) == {
        "kafka.bootstrap.servers": CLUSTER,
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": mechanism,
        "kafka.sasl.jaas.config": f'{module} required username="api-key" '
        f'password="pa\\"ss\\\\w0rd-9c1e";',
    }
    assert client_options(CLUSTER, environ) == {
        "bootstrap_servers": CLUSTER,
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": "api-key",
        "sasl_plain_password": PASSWORD,
    }
    assert librdkafka_options(CLUSTER, environ) == {
        "bootstrap.servers": CLUSTER,
        "security.protocol": "sasl_ssl",
        "sasl.mechanisms": mechanism,
        "sasl.username": "api-key",
        "sasl.password": PASSWORD,
    }


def test_a_ca_file_becomes_a_pem_trust_store_for_spark_and_the_ca_file_of_the_python_clients(
    tmp_path,
):
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    environ = cluster(SECURITY_PROTOCOL="ssl", SSL_CA_LOCATION=str(ca))  # the protocol in any case
    assert spark_options(CLUSTER, environ) == {
        "kafka.bootstrap.servers": CLUSTER,
        "kafka.security.protocol": "SSL",
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": str(ca),
    }
    assert client_options(CLUSTER, environ) == {
        "bootstrap_servers": CLUSTER,
        "security_protocol": "SSL",
        "ssl_cafile": str(ca),
    }
    assert librdkafka_options(CLUSTER, environ)["ssl.ca.location"] == str(ca)


def test_kafka_option_variables_reach_spark_only():
    environ = sasl(
        "scram-sha-512",
        OPTION_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM="https",
        OPTION_REQUEST_TIMEOUT_MS="60000",
    )
    options = spark_options(CLUSTER, environ)
    assert options["kafka.sasl.mechanism"] == "SCRAM-SHA-512"
    assert options["kafka.ssl.endpoint.identification.algorithm"] == "https"
    assert options["kafka.request.timeout.ms"] == "60000"
    assert not any(
        "timeout" in name or "endpoint" in name for name in client_options(CLUSTER, environ)
    )


def test_kafkas_own_parser_reads_the_login_back(spark):
    """The quoting is Kafka's: its JaasConfig parses the setting and returns the user and password
    exactly."""
    parsed = spark._jvm.org.apache.kafka.common.security.JaasConfig(
        "KafkaClient", jaas_config("PLAIN", "api-key", PASSWORD)
    )
    [entry] = parsed.getAppConfigurationEntry("KafkaClient")
    assert entry.getLoginModuleName() == PLAIN_LOGIN
    assert (entry.getOptions().get("username"), entry.getOptions().get("password")) == (
        "api-key",
        PASSWORD,
    )


# --- refusals -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "environ, says",
    [
        (
            cluster(SECURITY_PROTOCOL="TLS"),
            "KAFKA_SECURITY_PROTOCOL=TLS is not a Kafka security protocol",
        ),
        (
            sasl(protocol="SSL"),
            "so the cluster wants a SASL login, but KAFKA_SECURITY_PROTOCOL is SSL",
        ),
        (
            {**sasl(), "KAFKA_SECURITY_PROTOCOL": ""},
            "KAFKA_SECURITY_PROTOCOL is not set: set it to SASL_SSL",
        ),
        (
            cluster(SECURITY_PROTOCOL="SASL_SSL", SASL_USERNAME="api-key", SASL_PASSWORD=PASSWORD),
            "KAFKA_SECURITY_PROTOCOL=SASL_SSL needs KAFKA_SASL_MECHANISM",
        ),
        (sasl("GSSAPI"), "KAFKA_SASL_MECHANISM=GSSAPI is not one the course can log in with"),
        ({**sasl("SCRAM-SHA-256"), "KAFKA_SASL_USERNAME": " "}, "set KAFKA_SASL_USERNAME."),
        ({**sasl(), "KAFKA_SASL_PASSWORD": ""}, "set KAFKA_SASL_PASSWORD."),
        (
            {**sasl(), "KAFKA_SASL_PASSWORD": PASSWORD + "\n"},
            "KAFKA_SASL_PASSWORD contains a line break",
        ),
        (
            cluster(
                SECURITY_PROTOCOL="SASL_PLAINTEXT",
                SASL_MECHANISM="PLAIN",
                SASL_USERNAME="api-key",
                SASL_PASSWORD=PASSWORD,
                SSL_CA_LOCATION="/ca.pem",
            ),
            "which does not use TLS: set it to SSL or SASL_SSL",
        ),
        (
            sasl(SSL_CA_LOCATION="/no/such/ca.pem"),
            "KAFKA_SSL_CA_LOCATION names no file: /no/such/ca.pem",
        ),
        (
            sasl(OPTION_SASL_JAAS_CONFIG="x"),
            "KAFKA_OPTION_SASL_JAAS_CONFIG sets kafka.sasl.jaas.config, which the course",
        ),
        (
            cluster(OPTION_BOOTSTRAP_SERVERS="elsewhere:9092"),
            "sets kafka.bootstrap.servers, which the course sets",
        ),
        (cluster(OPTION_="x"), "KAFKA_OPTION_ names no setting"),
    ],
)
def test_bad_combinations_are_refused_with_what_to_set_and_never_the_password(environ, says):
    for build in (spark_options, client_options, librdkafka_options):
        with pytest.raises(CourseError) as refused:
            build(CLUSTER, environ)
        assert says in str(refused.value)
        assert "Your own Kafka cluster" in str(refused.value)
        assert PASSWORD.strip() not in str(refused.value) and 'pa"ss' not in str(refused.value)


def test_the_password_is_in_no_description_of_the_settings():
    security = read_security(sasl("SCRAM-SHA-512", OPTION_SSL_KEY_PASSWORD="key-" + PASSWORD))
    assert security.describe() == " over SASL_SSL with SCRAM-SHA-512"
    assert 'pa"ss' not in repr(security) and "api-key" in repr(security)


# --- the course's own broker ----------------------------------------------------------------------


def test_without_kafka_bootstrap_servers_the_variables_are_left_out_and_said_so_once(capsys):
    environ = {
        **sasl("GSSAPI", OPTION_SASL_JAAS_CONFIG="x")
    }  # refused for a cluster; here only noted
    del environ[config.KAFKA_BOOTSTRAP_ENV]
    own = config.local_kafka_bootstrap()
    assert spark_options(own, environ) == {"kafka.bootstrap.servers": own}
    assert client_options(own, environ) == {"bootstrap_servers": own}
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "Note: KAFKA_SECURITY_PROTOCOL, KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME, "
        "KAFKA_SASL_PASSWORD, KAFKA_OPTION_SASL_JAAS_CONFIG are set but KAFKA_BOOTSTRAP_SERVERS "
        "is not: the course's own broker at "
        f"{own} speaks plaintext, so they are not used.\n"
    )
    assert librdkafka_options(own, environ) == {"bootstrap.servers": own}
    assert capsys.readouterr().err == ""  # once per process


def test_another_address_than_kafka_bootstrap_servers_is_spoken_to_in_plaintext(capsys):
    assert client_options("127.0.0.1:19092", sasl()) == {"bootstrap_servers": "127.0.0.1:19092"}
    assert (
        f"describe the cluster in KAFKA_BOOTSTRAP_SERVERS ({CLUSTER}); 127.0.0.1:19092 is another "
        f"address" in (capsys.readouterr().err)
    )


@pytest.mark.kafka
def test_an_explicit_plaintext_protocol_still_sends_and_reads_a_topic(
    spark, kafka_bootstrap, topic, monkeypatch
):
    """The test run's broker is KAFKA_BOOTSTRAP_SERVERS, so the variable applies: kafka-python
    sends, Spark reads."""
    monkeypatch.setenv("KAFKA_SECURITY_PROTOCOL", "PLAINTEXT")
    assert spark_options(kafka_bootstrap)["kafka.security.protocol"] == "PLAINTEXT"
    name = topic("plaintext")
    ensure_topics(kafka_bootstrap, [name])
    kafka_producer.send_messages(
        kafka_bootstrap, kafka_producer.build_messages("ecommerce", 3, topic=name)
    )
    sent = [json.loads(record.value)["event_id"] for record in consume_all(kafka_bootstrap, name)]
    read = load_lesson("08_kafka_streaming").read_topic_back(
        spark, kafka_bootstrap, name, "event_id STRING"
    )
    assert sorted(row.event_id for row in read.collect()) == sorted(sent) and len(sent) == 3
