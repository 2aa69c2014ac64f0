const test = require('node:test');
const assert = require('node:assert');
const http = require('node:http');
const app = require('../server');

test('GET /health over localhost', async () => {
  const server = app.listen(0, 'localhost');
  await new Promise((resolve) => server.once('listening', resolve));
  const body = await new Promise((resolve, reject) => http.get(`http://localhost:${server.address().port}/health`, (r) => {
    let d = '';
    r.on('data', (c) => { d += c; });
    r.on('end', () => resolve(d));
  }).on('error', reject));
  server.close();
  assert.deepStrictEqual(JSON.parse(body), { ok: true, express: '4.17.1' });
});

test('an unknown path is 404', async () => {
  const server = app.listen(0, 'localhost');
  await new Promise((resolve) => server.once('listening', resolve));
  const status = await new Promise((resolve, reject) => http.get(`http://localhost:${server.address().port}/nope`, (r) => {
    r.resume();
    resolve(r.statusCode);
  }).on('error', reject));
  server.close();
  assert.strictEqual(status, 404);
});
