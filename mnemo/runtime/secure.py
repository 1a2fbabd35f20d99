"""``--secure`` for the local servers: per-user passwords, a self-signed CA and server certificate, and what
nats-server and the processes need to use them (``mnemo run --secure``, ``mnemo cluster --secure``, tests).

Everything lives under ``<data_dir>/secure`` and is generated once: ``passwords/<user>.password`` (0600,
``mnemo.runtime.nats_auth``), ``tls/ca.pem``, ``tls/server.pem``, ``tls/server-key.pem``. The certificate names
``localhost`` and ``127.0.0.1``: a local setup only; a deployment brings its own (``deploy/nats-secure.conf``).
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from mnemo.runtime.nats_auth import render_authorization, write_passwords


@dataclass(frozen=True)
class SecureNats:
    """The server's extra configuration and the processes' ``MNEMO_NATS__*`` environment."""

    server_config: str
    env: dict[str, str]
    password_dir: Path
    ca_file: Path


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def write_self_signed(directory: Path, hosts: tuple[str, ...] = ("localhost", "127.0.0.1")) -> tuple[Path, Path, Path]:
    """A CA and a server certificate it signed for ``hosts`` (DNS names or IPs), valid a year; kept when present.
    Returns (ca, server certificate, server key)."""
    ca_path, cert_path, key_path = directory / "ca.pem", directory / "server.pem", directory / "server-key.pem"
    if ca_path.exists() and cert_path.exists() and key_path.exists():
        return ca_path, cert_path, key_path
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mnemo local CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key_path.touch(mode=0o600)
    key_path.write_bytes(_key_pem(key))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    ca_path.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    return ca_path, cert_path, key_path


def secure_nats(data_dir: Path, hosts: tuple[str, ...] = ("localhost", "127.0.0.1")) -> SecureNats:
    """Generate (once) the passwords and certificates under ``data_dir/secure``; the server config to add
    (TLS for clients, the users of ``mnemo.runtime.nats_auth``) and the processes' environment."""
    home = data_dir / "secure"
    password_dir = home / "passwords"
    passwords = write_passwords(password_dir)
    ca, cert, key = write_self_signed(home / "tls", hosts)
    server_config = (
        f"tls {{ cert_file: {_quote(cert)}, key_file: {_quote(key)}, timeout: 5 }}\n" + render_authorization(passwords)
    )
    env = {"MNEMO_NATS__PASSWORD_DIR": str(password_dir.resolve()), "MNEMO_NATS__TLS_CA_FILE": str(ca.resolve())}
    return SecureNats(server_config, env, password_dir, ca)


def _quote(path: Path) -> str:
    return '"' + str(path.resolve()).replace("\\", "\\\\").replace('"', '\\"') + '"'
