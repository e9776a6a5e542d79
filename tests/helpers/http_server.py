#!/usr/bin/env python3
"""A loopback HTTP server for the proxy tests: binds 127.0.0.1 on a free port, prints the port
on the first line of stdout, and appends every request path it serves to the log file given
as argv[1] (so a test can check from outside what reached it). Serves until killed."""
import http.server
import sys

LOG = sys.argv[1]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        with open(LOG, "a") as log:
            log.write(self.path + "\n")
        body = b"hello from the loopback server\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
