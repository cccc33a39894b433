"""A fake durable execution endpoint for wfc-cli/tests/lambda_durable_live.rs: it checks each
request's SigV4 signature independently of the Rust SDK, with botocore's signer, and answers
from a script. Usage: sigv4_server.py PORT LOG SCRIPT, SCRIPT a comma-separated list of answers
for the successive requests ("throttle", "notfound", "ok"; the last one repeats). Each request
is logged as a JSON line: {"path", "target", "valid", "answer"}."""

import hashlib
import json
import ssl
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.compat import HTTPHeaders
from botocore.credentials import Credentials

PORT, LOG, SCRIPT = int(sys.argv[1]), sys.argv[2], sys.argv[3].split(",")
KEY, SECRET, REGION = "AKIDWFCTEST", "wfc/test/secret", "us-east-1"


class Signed(SigV4Auth):
    """botocore's SigV4 over exactly the headers the request says it signed."""

    def __init__(self, signed, *args):
        super().__init__(*args)
        self.signed = signed

    def headers_to_sign(self, request):
        h = HTTPHeaders()
        for name in self.signed:
            h[name] = request.headers[name]
        return h


def valid(handler, body):
    auth = handler.headers.get("Authorization", "")
    if not auth.startswith("AWS4-HMAC-SHA256 "):
        return False
    fields = dict(p.strip().split("=", 1) for p in auth[len("AWS4-HMAC-SHA256 "):].split(","))
    scope = fields["Credential"].split("/")
    if scope[0] != KEY or scope[2] != REGION or scope[3] != "lambda":
        return False
    signed = fields["SignedHeaders"].split(";")
    if "host" not in signed or "x-amz-date" not in signed:
        return False
    headers = {name: handler.headers[name] for name in signed}
    request = AWSRequest(method=handler.command, url="http://%s%s" % (headers["host"], handler.path), data=body, headers=headers)
    request.context["timestamp"] = headers["x-amz-date"]
    request.context["payload_signing_enabled"] = True
    signer = Signed(signed, Credentials(KEY, SECRET), "lambda", REGION)
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    return expected == fields["Signature"] and headers.get("x-amz-content-sha256", hashlib.sha256(body).hexdigest()) == hashlib.sha256(body).hexdigest()


class Handler(BaseHTTPRequestHandler):
    count = 0

    def answer(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0") or "0"))
        ok = valid(self, body)
        script = SCRIPT[min(Handler.count, len(SCRIPT) - 1)]
        Handler.count += 1
        if not ok:
            status, kind, reply = 403, "InvalidSignatureException", {"message": "signature mismatch"}
        elif script == "throttle":
            status, kind, reply = 429, "ThrottlingException", {"Type": "User", "message": "Rate exceeded"}
        elif script == "notfound":
            status, kind, reply = 404, "ResourceNotFoundException", {"Type": "User", "message": "Execution not found"}
        else:
            status, kind, reply = 200, None, {"CheckpointToken": "token-%d" % Handler.count, "NewExecutionState": {"Operations": []}}
        with open(LOG, "a") as log:
            log.write(json.dumps({"path": self.path, "valid": ok, "answer": script if ok else "badsig"}) + "\n")
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        if kind:
            self.send_header("x-amzn-ErrorType", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_POST = answer
    do_GET = answer

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", PORT), Handler)
if len(sys.argv) > 5:
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(sys.argv[4], sys.argv[5])
    # The handshake happens in the handler, so a probe that connects and leaves costs nothing.
    server.socket = tls.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
server.serve_forever()
