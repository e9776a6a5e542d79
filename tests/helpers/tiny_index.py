#!/usr/bin/env python3
"""A tiny package index on loopback for the loopback-forwarding tests: makes a one-file wheel
(`cordon_tiny_pkg` 0.1) in a fresh directory, serves a PEP 503 simple index for it with
http.server on 127.0.0.1 (a free port unless argv[2] names one), prints the port on the first
line of stdout, and appends every request path to the log file given as argv[1] (so a test
checks from outside what reached it). With argv[3] = "6" it listens on ::1 instead. Serves
until killed; no internet involved."""
import base64
import hashlib
import http.server
import os
import socket
import sys
import tempfile
import zipfile

LOG = sys.argv[1]
PORT = int(sys.argv[2]) if len(sys.argv) > 2 else 0
FAMILY = socket.AF_INET6 if len(sys.argv) > 3 and sys.argv[3] == "6" else socket.AF_INET
NAME, VERSION = "cordon_tiny_pkg", "0.1"
WHEEL = f"{NAME}-{VERSION}-py3-none-any.whl"

# Beside the log, in the test's own directory, which goes with the test: a directory of the
# index's own would outlive it (the test kills the index).
root = tempfile.mkdtemp(prefix="tiny-index-", dir=os.path.dirname(os.path.abspath(LOG)))


def record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


files = {
    f"{NAME}/__init__.py": b"FROM_THE_TINY_INDEX = True\n",
    f"{NAME}-{VERSION}.dist-info/METADATA": (
        f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n".encode()
    ),
    f"{NAME}-{VERSION}.dist-info/WHEEL": (
        b"Wheel-Version: 1.0\nGenerator: cordon-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    ),
}
record = "\n".join(record_line(p, d) for p, d in files.items())
record += f"\n{NAME}-{VERSION}.dist-info/RECORD,,\n"
os.makedirs(os.path.join(root, "packages"))
with zipfile.ZipFile(os.path.join(root, "packages", WHEEL), "w") as wheel:
    for path, data in files.items():
        wheel.writestr(path, data)
    wheel.writestr(f"{NAME}-{VERSION}.dist-info/RECORD", record)
project = os.path.join(root, "simple", NAME.replace("_", "-"))
os.makedirs(project)
with open(os.path.join(project, "index.html"), "w") as page:
    page.write(f'<html><body><a href="/packages/{WHEEL}">{WHEEL}</a></body></html>\n')
with open(os.path.join(root, "simple", "index.html"), "w") as page:
    page.write(f'<html><body><a href="{NAME.replace("_", "-")}/">{NAME}</a></body></html>\n')


class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, directory=root, **kwargs)

    def do_GET(self):
        with open(LOG, "a") as log:
            log.write(self.path + "\n")
        super().do_GET()

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    address_family = FAMILY
    daemon_threads = True


server = Server(("::1" if FAMILY == socket.AF_INET6 else "127.0.0.1", PORT), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
