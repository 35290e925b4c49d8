#!/usr/bin/env node
// A loopback proxy that lets the official deploy tool talk to `converge emulator`: it renames only the words the spec
// names neutrally (github -> codehost, langgraph_config_path -> graph_config_path) in JSON bodies, and back in answers.
// Usage: node scripts/official-tool-proxy.mjs TARGET_URL [PORT]   (prints "proxy listening on URL", then one line per request)
// See docs/official-tool.md, "Running the official tool against the emulator".
import { createServer, request } from 'node:http';

const [target, portText = '0'] = process.argv.slice(2);
if (!target) {
  process.stderr.write('usage: node scripts/official-tool-proxy.mjs TARGET_URL [PORT]\n');
  process.exit(2);
}
const upstream = new URL(target);

/** Request direction: the tool's words to the spec's. */
const TO_SPEC = { keys: { langgraph_config_path: 'graph_config_path' }, values: { github: 'codehost' } };
/** Answer direction: the spec's words to the tool's. */
const TO_TOOL = { keys: { graph_config_path: 'langgraph_config_path' }, values: { codehost: 'github' } };

function rename(value, words) {
  if (Array.isArray(value)) return value.map((item) => rename(item, words));
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [words.keys[key] ?? key, rename(item, words)]),
    );
  }
  return typeof value === 'string' && Object.hasOwn(words.values, value) ? words.values[value] : value;
}

/** The body renamed when it is JSON; any other body (a tarball) passes byte for byte. */
function renameBody(buffer, contentType, words) {
  if (!/json/i.test(contentType ?? '') || buffer.length === 0) return buffer;
  try {
    return Buffer.from(JSON.stringify(rename(JSON.parse(buffer.toString('utf8')), words)));
  } catch {
    return buffer;
  }
}

function readAll(stream) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    stream.on('data', (c) => chunks.push(c));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}

const server = createServer(async (req, res) => {
  const body = renameBody(await readAll(req), req.headers['content-type'], TO_SPEC);
  const headers = { ...req.headers, host: upstream.host, 'content-length': String(body.length) };
  const forward = request(
    { hostname: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers },
    async (answer) => {
      const text = renameBody(await readAll(answer), answer.headers['content-type'], TO_TOOL);
      process.stderr.write(`${req.method} ${req.url} -> ${answer.statusCode}\n`);
      res.writeHead(answer.statusCode ?? 502, { ...answer.headers, 'content-length': String(text.length) });
      res.end(text);
    },
  );
  forward.on('error', (error) => {
    process.stderr.write(`${req.method} ${req.url} -> proxy error ${error.message}\n`);
    res.writeHead(502, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ detail: `proxy: ${error.message}` }));
  });
  forward.end(body);
});

server.listen(Number(portText), '127.0.0.1', () => {
  process.stderr.write(`proxy listening on http://127.0.0.1:${server.address().port} -> ${upstream.origin}\n`);
});
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => server.close(() => process.exit(0)));
