# A dev server for PreviewRoutingE2eTest, run inside a workspace: redirects the way Flask/Express apps do (a
# relative /login, an absolute http://localhost:<port>/home), sets a cookie with Path and Domain, and answers /echo
# with the request head it saw (Host, Origin, X-Forwarded-*), so the test can check every rewrite.
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])


class App(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, status, body, headers=()):
        data = body.encode()
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Type", "text/plain" if not body.startswith("{") else "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def do_GET(self):
        if self.path == "/":
            self.reply(200, "root page\n")
        elif self.path == "/go-login":
            self.reply(302, "to login\n", [("Location", "/login"), ("Set-Cookie", "sid=s1; Path=/; Domain=localhost; SameSite=Lax")])
        elif self.path == "/go-home":
            self.reply(302, "to home\n", [("Location", "http://localhost:%d/home?x=1" % PORT)])
        elif self.path == "/go-away":
            self.reply(302, "elsewhere\n", [("Location", "https://example.org/")])
        elif self.path == "/login":
            self.reply(200, "login page\n")
        elif self.path.startswith("/home"):
            self.reply(200, "home page\n")
        elif self.path == "/echo":
            h = self.headers
            self.reply(200, json.dumps({"path": self.path, "host": h.get("Host"), "origin": h.get("Origin"),
                                        "x_forwarded_host": h.get("X-Forwarded-Host"), "x_forwarded_proto": h.get("X-Forwarded-Proto"),
                                        "x_forwarded_prefix": h.get("X-Forwarded-Prefix"), "cookie": h.get("Cookie"),
                                        "authorization": h.get("Authorization")}))
        else:
            self.reply(404, "no " + self.path + "\n")

    do_HEAD = do_GET

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", PORT), App).serve_forever()
