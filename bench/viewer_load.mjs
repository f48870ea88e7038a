// SPDX-License-Identifier: Apache-2.0
// node bench/viewer_load.mjs FILE...: how Chromium copes with loading JSON snapshots the way the
// memory_viz viewer does before any view is drawn: the file's bytes (fetch), one string
// (TextDecoder), JSON.parse, then a walk over every trace entry and block like its annotation pass.
// Prints one line per file: its size, the time of each step, and the JavaScript heap after, or
// the step that failed. Not part of ctest (it needs Chromium and puppeteer-core); see
// bench/README.md, "How big a JSON snapshot a browser opens".
//   npm install --prefix /tmp/pptr puppeteer-core    (no browser download: it drives the system's)
//   NODE_PATH=/tmp/pptr/node_modules node bench/viewer_load.mjs a.json b.json
// CHROMIUM names the browser (default /usr/bin/chromium).
import {createRequire} from 'node:module';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

const require = createRequire(path.join(process.env.NODE_PATH || process.cwd(), 'x.js'));
const puppeteer = require('puppeteer-core');
const files = process.argv.slice(2);
const server = http.createServer((req, res) => {
  const i = Number(req.url.slice(1));
  if (!(i >= 0 && i < files.length)) return res.end('<!DOCTYPE html><title>load</title>');
  res.writeHead(200, {'Content-Type': 'application/octet-stream'});
  fs.createReadStream(files[i]).pipe(res);
});
await new Promise(r => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${server.address().port}/`;
const browser = await puppeteer.launch({executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true, args: ['--no-sandbox', '--enable-precise-memory-info'], protocolTimeout: 600000});
for (let i = 0; i < files.length; i++) {
  const page = await browser.newPage();
  await page.goto(base + 'page');
  let result;
  try {
    result = await page.evaluate(async url => {
      const mib = n => Math.round(n / 1048576 * 10) / 10;
      const t0 = performance.now();
      const buf = await (await fetch(url)).arrayBuffer();
      const t1 = performance.now();
      let text, snapshot;
      try { text = new TextDecoder().decode(buf); } catch (e) { return {file_mib: mib(buf.byteLength), failed: 'decode: ' + e}; }
      const t2 = performance.now();
      try { snapshot = JSON.parse(text); } catch (e) { return {file_mib: mib(buf.byteLength), failed: 'JSON.parse: ' + e}; }
      const t3 = performance.now();
      text = null;
      let events = 0;
      for (const trace of snapshot.device_traces) for (const t of trace) t.idx = events++;
      for (const s of snapshot.segments) for (const b of s.blocks) b.addr = s.address;
      const t4 = performance.now();
      window.kept = snapshot;
      return {file_mib: mib(buf.byteLength), events, fetch_ms: Math.round(t1 - t0), decode_ms: Math.round(t2 - t1),
              parse_ms: Math.round(t3 - t2), walk_ms: Math.round(t4 - t3), heap_mib: mib(performance.memory.usedJSHeapSize)};
    }, base + i);
  } catch (e) {
    result = {failed: String(e).slice(0, 200)}; /* the page crashed (out of memory) */
  }
  console.log(path.basename(files[i]), JSON.stringify(result));
  await page.close().catch(() => {});
}
await browser.close();
server.close();
