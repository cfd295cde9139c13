"""Tokens and TLS against a hitboxd with credentials (--admin-token-file, --tls-*)."""
import shutil
import subprocess

import pytest

import hitbox
from hitbox import errors
from conftest import Hitboxd

ADMIN = "py-admin-token-0123456789abcdef"


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    token_file = tmp_path_factory.mktemp("auth") / "admin.token"
    token_file.write_text(ADMIN + "\n")
    d = Hitboxd("--admin-token-file", str(token_file))
    yield d
    assert d.stop() == 0, d.log()


# The admin token creates; the session's token (remembered) works on it; others are refused.
def test_tokens(secured):
    opts = hitbox.ClientOptions(wait_for_ready=True)
    with hitbox.Client(secured.address, opts) as anonymous:
        with pytest.raises(errors.Unauthenticated):
            anonymous.create_session("t1")
    with hitbox.Client(secured.address, hitbox.ClientOptions(token=ADMIN, wait_for_ready=True)) as admin:
        info = admin.create_session("t1")
        admin.create_session("t2")
        assert {"t1", "t2"} <= {s.session_id for s in admin.list_sessions()}
        # The game server gets t1's token only: it may use t1, not t2, nor list sessions.
        with hitbox.Client(secured.address, opts) as game:
            with pytest.raises(errors.Unauthenticated):
                game.get_session("t1")
            game.set_session_token("t1", info.token)
            game.add_colliders("t1", [hitbox.Collider(1, hitbox.Sphere(1))])
            assert game.raycast("t1", (-5, 0, 0), (10, 0, 0)).id == 1
            with game.open_tick_stream("t1") as stream:
                assert stream.tick().revision == 1
            with pytest.raises(errors.Unauthenticated):
                game.get_session("t2")
            game.set_session_token("t2", info.token)
            with pytest.raises(errors.PermissionDenied):
                game.get_session("t2")
            # A tick stream with the wrong token ends with the refusal.
            with pytest.raises(errors.PermissionDenied):
                game.open_tick_stream("t2").tick()
            with pytest.raises(errors.Unauthenticated):
                game.list_sessions()
            with pytest.raises(errors.Unauthenticated):  # maps need a token of some kind
                game.list_maps()
        assert admin.list_maps() == []
        admin.delete_session("t1")
        admin.delete_session("t2")


def make_certs(d):
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    def sh(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=d)

    (d / "server.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n"
                                  "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
    (d / "client.ext").write_text("basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n")
    sh("req", "-x509", *ec, "-days", "2", "-subj", "/CN=hitbox-py-ca", "-keyout", "ca.key",
       "-out", "ca.pem")
    for who in ("server", "client"):
        sh("req", *ec, "-subj", f"/CN={'localhost' if who == 'server' else 'py-client'}",
           "-keyout", f"{who}.key", "-out", f"{who}.csr")
        sh("x509", "-req", "-days", "2", "-in", f"{who}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
           "-CAcreateserial", "-extfile", f"{who}.ext", "-out", f"{who}.pem")


# Mutual TLS: with the CA and a client certificate every call works; without a certificate none does.
@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_mutual_tls(tmp_path):
    make_certs(tmp_path)
    d = Hitboxd("--tls-cert", str(tmp_path / "server.pem"), "--tls-key", str(tmp_path / "server.key"),
                "--tls-client-ca", str(tmp_path / "ca.pem"))
    try:
        tls = hitbox.TlsOptions(ca_file=str(tmp_path / "ca.pem"), cert_file=str(tmp_path / "client.pem"),
                                key_file=str(tmp_path / "client.key"), server_name="localhost")
        with hitbox.Client(d.address, hitbox.ClientOptions(tls=tls, wait_for_ready=True)) as c:
            assert c.check_health() == "SERVING"
            s = c.create_session()
            assert c.get_session(s.session_id).session_id == s.session_id
        no_cert = hitbox.TlsOptions(ca_file=str(tmp_path / "ca.pem"), server_name="localhost")
        with hitbox.Client(d.address, hitbox.ClientOptions(tls=no_cert, timeout=2)) as c:
            with pytest.raises(errors.Unavailable):
                c.check_health()
        with pytest.raises(ValueError, match="tls.ca_file: cannot read"):
            hitbox.Client(d.address, hitbox.ClientOptions(tls=hitbox.TlsOptions(ca_file="/nonexistent")))
    finally:
        assert d.stop() == 0, d.log()
