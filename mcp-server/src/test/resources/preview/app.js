// A dev server for PreviewE2eTest, run inside a workspace: a page whose script echoes a message over a WebSocket,
// an RFC 6455 WebSocket echo endpoint (handshake and framing by hand: Node 20 has no WebSocket server built in),
// Server-Sent Events, a chunked response, and a dump of the request head the app saw.
const http = require('http');
const crypto = require('crypto');
const port = Number(process.argv[2] || 3000);

const page = `<!doctype html><html><body><div id="status">loading</div><script>
const ws = new WebSocket(location.href.replace(/^http/, 'ws').replace(/[^/]*$/, '') + 'ws');
ws.onopen = () => { document.getElementById('status').textContent = 'open'; ws.send('ping-berth'); };
ws.onmessage = (m) => { const d = document.createElement('div'); d.id = 'echo'; d.textContent = 'echo:' + m.data; document.body.appendChild(d); };
ws.onerror = () => { document.getElementById('status').textContent = 'ws error'; };
</script></body></html>`;

const server = http.createServer((req, res) => {
  if (req.url === '/' || req.url === '/index.html') {
    res.writeHead(200, {'content-type': 'text/html'});
    res.end(page);
  } else if (req.url === '/headers') {
    res.writeHead(200, {'content-type': 'application/json'});
    res.end(JSON.stringify({url: req.url, headers: req.headers}));
  } else if (req.url === '/sse') {
    res.writeHead(200, {'content-type': 'text/event-stream', 'cache-control': 'no-cache'});
    let n = 0;
    const t = setInterval(() => {
      res.write(`data: tick ${++n}\n\n`);
      if (n === 3) { clearInterval(t); res.end(); }
    }, 50);
  } else if (req.url.startsWith('/big/')) {
    const mib = Number(req.url.slice(5));
    const chunk = Buffer.alloc(1 << 20, 120);
    res.writeHead(200, {'content-type': 'application/octet-stream', 'content-length': mib << 20});
    let i = 0;
    const more = () => { while (i < mib) { i++; if (!res.write(chunk)) { res.once('drain', more); return; } } res.end(); };
    more();
  } else if (req.url === '/tiny') {
    res.writeHead(200, {'content-type': 'text/plain', 'content-length': 2});
    res.end('ok');
  } else if (req.url === '/hold') {
    res.writeHead(200, {'content-type': 'text/plain'});
    res.write('held\n'); // and never ends: the connection stays open until the client closes it
  } else if (req.url === '/chunked') {
    res.writeHead(200, {'content-type': 'text/plain'}); // no length: Node sends it chunked
    res.write('part1-'); res.write('part2-'); res.end('end');
  } else if (req.url === '/upload' && req.method === 'POST') {
    let n = 0;
    req.on('data', (d) => { n += d.length; });
    req.on('end', () => { res.writeHead(200); res.end('got ' + n); });
  } else {
    res.writeHead(404); res.end('no ' + req.url);
  }
});

server.on('upgrade', (req, socket) => {
  const key = req.headers['sec-websocket-key'];
  const accept = crypto.createHash('sha1').update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
  socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ' + accept + '\r\n\r\n');
  let buf = Buffer.alloc(0);
  socket.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    while (buf.length >= 2) {
      const op = buf[0] & 0x0f;
      let len = buf[1] & 0x7f, off = 2;
      if (len === 126) { if (buf.length < 4) return; len = buf.readUInt16BE(2); off = 4; }
      else if (len === 127) { if (buf.length < 10) return; len = Number(buf.readBigUInt64BE(2)); off = 10; }
      const masked = (buf[1] & 0x80) !== 0;
      const need = off + (masked ? 4 : 0) + len;
      if (buf.length < need) return;
      const mask = masked ? buf.slice(off, off + 4) : null;
      const payload = Buffer.from(buf.slice(off + (masked ? 4 : 0), need));
      if (mask) for (let i = 0; i < payload.length; i++) payload[i] ^= mask[i % 4];
      buf = buf.slice(need);
      if (op === 8) { socket.end(Buffer.from([0x88, 0])); return; }
      if (op === 1 || op === 2) {
        const hdr = payload.length < 126 ? Buffer.from([0x80 | op, payload.length])
          : Buffer.from([0x80 | op, 126, payload.length >> 8, payload.length & 0xff]);
        socket.write(Buffer.concat([hdr, payload]));
      }
    }
  });
});

server.listen(port, '127.0.0.1', () => console.log('listening on ' + port));
