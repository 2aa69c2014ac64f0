// Test-only reverse proxy for the conformance suite, which cannot send credentials: it forwards every request to
// berth unchanged (method, path, headers including Host and Origin, body, streamed responses) and adds one
// Authorization header. berth itself stays fully authenticated; the suite's DNS-rebinding checks reach it as sent.
//
// Usage: node auth-proxy.mjs <listen-port> <target-port> <bearer-token>   (loopback only)
import http from "node:http";

const [listenPort, targetPort, token] = process.argv.slice(2);
const server = http.createServer((req, res) => {
  const headers = { ...req.headers, authorization: `Bearer ${token}` };
  const upstream = http.request(
    { host: "127.0.0.1", port: Number(targetPort), method: req.method, path: req.url, headers },
    (up) => {
      res.writeHead(up.statusCode, up.headers);
      up.pipe(res);
    });
  upstream.on("error", (e) => {
    res.writeHead(502, { "content-type": "text/plain" });
    res.end(`proxy: ${e.message}`);
  });
  req.pipe(upstream);
  res.on("close", () => upstream.destroy());
});
server.listen(Number(listenPort), "127.0.0.1", () => console.log(`auth-proxy listening on ${listenPort}`));
