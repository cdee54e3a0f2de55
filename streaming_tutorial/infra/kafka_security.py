"""How to reach your own (managed) Kafka cluster: security settings read from the environment, once.

    spark.readStream.format("kafka").options(**spark_options(bootstrap))        # Spark source/sink
    KafkaProducer(**client_options(bootstrap), acks="all")                      # kafka-python
    confluent_kafka.Producer({**librdkafka_options(bootstrap), "acks": "all"})  # confluent-kafka

Each returns the bootstrap servers plus, for the cluster in KAFKA_BOOTSTRAP_SERVERS, the
settings these variables describe (all optional):

    KAFKA_SECURITY_PROTOCOL   PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
    KAFKA_SASL_MECHANISM      PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (with a SASL_ protocol),
    KAFKA_SASL_USERNAME         with the user and password to log in as
    KAFKA_SASL_PASSWORD
    KAFKA_SSL_CA_LOCATION     a PEM file of the certificates to trust (SSL, SASL_SSL); without
                              it the JVM's and the system's own trusted authorities are used
    KAFKA_OPTION_<NAME>       any other Kafka client setting, for Spark only:
                              KAFKA_OPTION_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM=https becomes
                              .option("kafka.ssl.endpoint.identification.algorithm", "https")

They belong to KAFKA_BOOTSTRAP_SERVERS: any other address (the course's own broker, a test's
broker) is spoken to in plaintext, and a note on stderr says once that they were left out.
Bad combinations are refused with a CourseError that says what to set; no message ever
contains the password.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping

from common import config
from infra.errors import CourseError

PROTOCOL_ENV = "KAFKA_SECURITY_PROTOCOL"
MECHANISM_ENV = "KAFKA_SASL_MECHANISM"
USERNAME_ENV = "KAFKA_SASL_USERNAME"
PASSWORD_ENV = "KAFKA_SASL_PASSWORD"
CA_LOCATION_ENV = "KAFKA_SSL_CA_LOCATION"
OPTION_PREFIX = "KAFKA_OPTION_"
NAMED_VARIABLES = (PROTOCOL_ENV, MECHANISM_ENV, USERNAME_ENV, PASSWORD_ENV, CA_LOCATION_ENV)

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
# The mechanisms a username and password are enough for. GSSAPI (Kerberos) and OAUTHBEARER need
# more than two values; Spark can still get them through KAFKA_OPTION_ variables.
LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
SEE_ALSO = "(README, 'Your own Kafka cluster')"

_noted: set[str] = set()  # the notes already printed by this process


@dataclass(frozen=True)
class Security:
    """What the environment says about the cluster; all None: plaintext, the clients' defaults."""

    protocol: str | None = None
    mechanism: str | None = None
    username: str | None = None
    password: str | None = field(
        default=None, repr=False
    )  # repr=False: never in a traceback or log
    ca_location: str | None = None
    # From KAFKA_OPTION_<NAME>, Spark only; repr=False: a value may be a key password.
    spark_extra: dict[str, str] = field(default_factory=dict, repr=False)

    def describe(self) -> str:
        """' over SASL_SSL with SCRAM-SHA-512' (no user, no password), or '' for the defaults."""
        if not self.protocol:
            return ""
        return f" over {self.protocol}" + (f" with {self.mechanism}" if self.mechanism else "")


def spark_options(bootstrap: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Options for Spark's Kafka source and sink: ``.options(**spark_options(bootstrap))``."""
    security = security_for(bootstrap, environ)
    return {**named_spark_options(bootstrap, security), **security.spark_extra}


def named_spark_options(bootstrap: str, security: Security) -> dict[str, str]:
    """The Spark options that KAFKA_BOOTSTRAP_SERVERS and the named variables give."""
    options = {"kafka.bootstrap.servers": bootstrap}
    if security.protocol:
        options["kafka.security.protocol"] = security.protocol
    if security.mechanism:
        # Kafka's dynamic JAAS setting: the login travels with the query's options to every
        # executor, no JAAS file on any machine. Spark redacts it in its logs.
        options["kafka.sasl.mechanism"] = security.mechanism
        options["kafka.sasl.jaas.config"] = jaas_config(
            security.mechanism, security.username, security.password
        )
    if security.ca_location:
        # PEM trust stores (Kafka clients 2.7+) take the same file the Python clients use: no
        # keytool.
        options["kafka.ssl.truststore.type"] = "PEM"
        options["kafka.ssl.truststore.location"] = security.ca_location
    return options


def client_options(bootstrap: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Keyword arguments for kafka-python's KafkaProducer, KafkaConsumer and KafkaAdminClient."""
    security = security_for(bootstrap, environ)
    options = {
        "bootstrap_servers": bootstrap,
        "security_protocol": security.protocol,
        "sasl_mechanism": security.mechanism,
        "sasl_plain_username": security.username,  # kafka-python uses these two for SCRAM too
        "sasl_plain_password": security.password,
        "ssl_cafile": security.ca_location,
    }
    return {name: value for name, value in options.items() if value is not None}


def librdkafka_options(bootstrap: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The configuration dict for confluent-kafka's Producer (librdkafka's names)."""
    security = security_for(bootstrap, environ)
    options = {
        "bootstrap.servers": bootstrap,
        "security.protocol": security.protocol and security.protocol.lower(),
        "sasl.mechanisms": security.mechanism,
        "sasl.username": security.username,
        "sasl.password": security.password,
        "ssl.ca.location": security.ca_location,
    }
    return {name: value for name, value in options.items() if value is not None}


def security_for(bootstrap: str, environ: Mapping[str, str] | None = None) -> Security:
    """The settings for ``bootstrap``: the environment's for KAFKA_BOOTSTRAP_SERVERS, none for any
    other."""
    environ = os.environ if environ is None else environ
    note = ignored_note(bootstrap, environ)
    if note:
        if note not in _noted:
            _noted.add(note)
            print(note, file=sys.stderr, flush=True)
        return Security()
    return read_security(environ)


def ignored_note(bootstrap: str, environ: Mapping[str, str]) -> str | None:
    """Why the security variables set are not used for ``bootstrap``, or None when they are (or
    none is set)."""
    named = set_variables(environ)
    configured = environ.get(config.KAFKA_BOOTSTRAP_ENV, "").strip()
    if not named or bootstrap == configured:
        return None
    if not configured:
        return (
            f"Note: {', '.join(named)} {'is' if len(named) == 1 else 'are'} set but "
            f"KAFKA_BOOTSTRAP_SERVERS is not: the course's own broker at {bootstrap} speaks "
            f"plaintext, so they are not used."
        )
    return (
        f"Note: {', '.join(named)} describe the cluster in KAFKA_BOOTSTRAP_SERVERS ({configured}); "
        f"{bootstrap} is another address, spoken to in plaintext."
    )


def set_variables(environ: Mapping[str, str]) -> list[str]:
    """The names (never the values) of the security variables that are set, in a fixed order."""
    extra = sorted(name for name in environ if name.startswith(OPTION_PREFIX))
    return [name for name in NAMED_VARIABLES if environ.get(name, "").strip()] + extra


def read_security(environ: Mapping[str, str]) -> Security:
    """The variables as checked settings; CourseError (naming variables, never the password) when
    they disagree."""
    value = {name: environ.get(name, "").strip() or None for name in NAMED_VARIABLES}
    protocol = value[PROTOCOL_ENV] and value[PROTOCOL_ENV].upper()
    mechanism = value[MECHANISM_ENV] and value[MECHANISM_ENV].upper()
    username, password, ca_location = (
        value[USERNAME_ENV],
        environ.get(PASSWORD_ENV) or None,
        value[CA_LOCATION_ENV],
    )
    if protocol is not None and protocol not in PROTOCOLS:
        refuse(
            f"{PROTOCOL_ENV}={value[PROTOCOL_ENV]} is not a Kafka security protocol: "
            f"use one of {', '.join(PROTOCOLS)}."
        )
    sasl = bool(protocol and protocol.startswith("SASL_"))
    login = [name for name in (MECHANISM_ENV, USERNAME_ENV, PASSWORD_ENV) if value[name]]
    if login and not sasl:
        refuse(
            f"{', '.join(login)} {'is' if len(login) == 1 else 'are'} set, so the cluster wants a "
            f"SASL login, but {PROTOCOL_ENV} is {protocol or 'not set'}: set it to SASL_SSL (a "
            f"managed cluster) or SASL_PLAINTEXT."
        )
    if sasl and mechanism is None:
        refuse(
            f"{PROTOCOL_ENV}={protocol} needs {MECHANISM_ENV} ({', '.join(LOGIN_MODULES)}) "
            f"with {USERNAME_ENV} and {PASSWORD_ENV}."
        )
    if mechanism is not None and mechanism not in LOGIN_MODULES:
        refuse(
            f"{MECHANISM_ENV}={value[MECHANISM_ENV]} is not one the course can log in with: use "
            f"one of {', '.join(LOGIN_MODULES)} (others, such as GSSAPI, reach Spark through "
            f"KAFKA_OPTION_ variables)."
        )
    missing = [name for name in (USERNAME_ENV, PASSWORD_ENV) if sasl and not value[name]]
    if missing:
        refuse(
            f"{MECHANISM_ENV}={mechanism} logs in with a user and a password: set "
            f"{' and '.join(missing)}."
        )
    for name, text in ((USERNAME_ENV, username), (PASSWORD_ENV, password)):
        if text and ("\n" in text or "\r" in text):
            refuse(
                f"{name} contains a line break, which Kafka's login setting cannot carry; set it "
                f"on one line."
            )
    if ca_location is not None:
        if protocol not in ("SSL", "SASL_SSL"):
            refuse(
                f"{CA_LOCATION_ENV} is set, but {PROTOCOL_ENV} is {protocol or 'not set'}, "
                "which does not use TLS: set it to SSL or SASL_SSL."
            )
        ca_location = str(Path(ca_location).expanduser().resolve())
        if not Path(ca_location).is_file():
            refuse(
                f"{CA_LOCATION_ENV} names no file: {ca_location}. It should be the PEM file of the "
                "certificates to trust (on a Spark cluster, at the same path on every machine)."
            )
    security = Security(protocol, mechanism, username, password, ca_location)
    return replace(security, spark_extra=spark_passthrough(environ, security))


def spark_passthrough(environ: Mapping[str, str], security: Security) -> dict[str, str]:
    """KAFKA_OPTION_<NAME>=value as Spark's kafka.<name> option; these reach Spark only, not the
    Python clients."""
    taken = set(named_spark_options("", security))
    options = {}
    for variable in sorted(name for name in environ if name.startswith(OPTION_PREFIX)):
        suffix = variable[len(OPTION_PREFIX) :]
        if not suffix.strip("_"):
            refuse(
                f"{variable} names no setting: write KAFKA_OPTION_ and the Kafka setting's name, "
                "with _ for its dots (KAFKA_OPTION_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM)."
            )
        option = "kafka." + suffix.lower().replace("_", ".")
        if option in taken:
            refuse(
                f"{variable} sets {option}, which the course sets itself from "
                f"KAFKA_BOOTSTRAP_SERVERS or the KAFKA_SECURITY_/SASL_/SSL_ variables: set it "
                f"there {SEE_ALSO}."
            )
        options[option] = environ[variable]
    return options


def jaas_config(mechanism: str, username: str, password: str) -> str:
    """Kafka's sasl.jaas.config for a user and password: values in double quotes, \\ and \"
    escaped."""

    def quoted(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

    return (
        f"{LOGIN_MODULES[mechanism]} required "
        f"username={quoted(username)} password={quoted(password)};"
    )


def refuse(message: str) -> None:
    raise CourseError(f"{message} {SEE_ALSO}")
