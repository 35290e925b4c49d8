// A stand-in compile worker for test/observe/compile-pool.test.ts: takes the pool's parse options, then answers each file
// with a diagnostic naming it and its bytes; a batch holding crash.yaml makes it exit (a worker thread that dies).
import { parentPort } from 'node:worker_threads';

let parseOptions;

parentPort.on('message', (message) => {
  if (!('id' in message)) {
    parseOptions = message.parseOptions;
    return;
  }
  const request = message;
  if (request.files.includes('crash.yaml')) process.exit(3);
  const bytes = new Uint8Array(request.buffer);
  const results = request.files.map((file, i) => {
    const text = new TextDecoder().decode(bytes.subarray(request.offsets[i], request.offsets[i + 1]));
    const message = `${text} ${parseOptions.allowLiteralSecrets}`;
    return {
      resources: [],
      blocked: [],
      diagnostics: [{ severity: 'warning', file, line: 1, column: 1, code: 'W_ECHO', message }],
    };
  });
  parentPort.postMessage({ id: request.id, results });
});
