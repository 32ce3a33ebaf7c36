"""A SAML 2.0 identity provider for Quire's tests, built on pysaml2 (which signs with the
xmlsec1 program). It listens on loopback and signs every user in at once as the e-mail given
on its command line: the test drives the whole login without a password form.

    python idp.py --key idp.key --cert idp.crt --email ada@example.com [--sign-response]

It prints `port <n>` once it listens. `GET /sso?SAMLRequest=...&RelayState=...` (the
HTTP-Redirect binding) answers a page whose form posts the signed response to the service
provider's ACS (the HTTP-POST binding), as a browser would submit it. The service provider's
metadata is read from its entity id, which Quire serves as a URL.
"""

import argparse
import base64
import html
import os
import re
import sys
import tempfile
import urllib.request
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.config import IdPConfig
from saml2.saml import NAMEID_FORMAT_EMAILADDRESS, NameID
from saml2.server import Server
from saml2.sigver import get_xmlsec_binary

ARGS = None
PORT = None


def entity_id():
    return f"http://127.0.0.1:{PORT}/idp"


def idp_for(sp_metadata_url):
    """A pysaml2 IdP that knows the service provider from its metadata."""
    with urllib.request.urlopen(sp_metadata_url, timeout=10) as res:
        metadata = res.read()
    folder = tempfile.mkdtemp(prefix="quire-idp-")
    md_path = os.path.join(folder, "sp.xml")
    with open(md_path, "wb") as f:
        f.write(metadata)
    config = IdPConfig()
    config.load(
        {
            "entityid": entity_id(),
            "service": {
                "idp": {
                    "endpoints": {
                        "single_sign_on_service": [
                            (f"http://127.0.0.1:{PORT}/sso", BINDING_HTTP_REDIRECT)
                        ]
                    },
                    "name_id_format": [NAMEID_FORMAT_EMAILADDRESS],
                    "want_authn_requests_signed": False,
                    "policy": {"default": {"lifetime": {"minutes": 5}}},
                }
            },
            "key_file": ARGS.key,
            "cert_file": ARGS.cert,
            "metadata": {"local": [md_path]},
            "xmlsec_binary": get_xmlsec_binary(),
        }
    )
    return Server(config=config)


class Handler(BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        sys.stderr.write("idp: " + (fmt % args) + "\n")

    def answer(self, status, body, content_type="text/html; charset=utf-8"):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        url = urlparse(self.path)
        if url.path == "/cert":
            with open(ARGS.cert) as f:
                return self.answer(200, f.read(), "text/plain")
        if url.path != "/sso":
            return self.answer(404, "not found")
        query = parse_qs(url.query)
        saml_request = query.get("SAMLRequest", [""])[0]
        relay_state = query.get("RelayState", [None])[0]
        try:
            xml = zlib.decompress(base64.b64decode(saml_request), -15).decode()
            issuer = re.search(r"<saml:Issuer>([^<]+)</saml:Issuer>", xml).group(1)
            server = idp_for(html.unescape(issuer))
            request = server.parse_authn_request(saml_request, BINDING_HTTP_REDIRECT)
            message = request.message
            sp_entity = message.issuer.text
            destination = message.assertion_consumer_service_url
            response = server.create_authn_response(
                identity={"mail": [ARGS.email], "displayName": [ARGS.name]},
                in_response_to=message.id,
                destination=destination,
                sp_entity_id=sp_entity,
                name_id=NameID(format=NAMEID_FORMAT_EMAILADDRESS, text=ARGS.email),
                authn={"class_ref": "urn:oasis:names:tc:SAML:2.0:ac:classes:Password"},
                sign_assertion=not ARGS.sign_response,
                sign_response=ARGS.sign_response,
                # pysaml2 signs with SHA-1 by default, which Quire refuses.
                sign_alg="http://www.w3.org/2001/04/xmldsig-more#rsa-sha256",
                digest_alg="http://www.w3.org/2001/04/xmlenc#sha256",
            )
        except Exception as e:  # noqa: BLE001 - a test IdP reports every failure
            self.log_message("refused: %r", e)
            return self.answer(400, f"bad request: {html.escape(repr(e))}")
        encoded = base64.b64encode(str(response).encode()).decode()
        relay = (
            f'<input type="hidden" name="RelayState" value="{html.escape(relay_state)}">'
            if relay_state
            else ""
        )
        page = (
            "<!doctype html><html><body onload=\"document.forms[0].submit()\">"
            f'<form method="post" action="{html.escape(destination)}">'
            f'<input type="hidden" name="SAMLResponse" value="{encoded}">{relay}'
            "<noscript><button type=\"submit\">Continue</button></noscript>"
            "</form></body></html>"
        )
        return self.answer(200, page)


def main():
    global ARGS, PORT
    parser = argparse.ArgumentParser()
    parser.add_argument("--key", required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--email", required=True)
    parser.add_argument("--name", default="Test User")
    parser.add_argument("--sign-response", action="store_true")
    ARGS = parser.parse_args()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    PORT = httpd.server_address[1]
    print(f"port {PORT}", flush=True)
    httpd.serve_forever()


if __name__ == "__main__":
    main()
