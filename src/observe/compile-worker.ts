// The worker thread of the compile pool (src/observe/compile-pool.ts): takes its parse options, then compiles batches of manifest files' bytes, one file's failure a diagnostic.
import { parentPort } from 'node:worker_threads';
import { compileFile } from '../core/manifest/compile.js';
import type { ParseOptions } from '../core/manifest/parse.js';
import { compileFailure, type BatchRequest, type BatchResult, type CompileSetup } from './compile-batch.js';

/** Set by the pool's first message, which comes before any batch (a port delivers messages in order). */
let parseOptions: ParseOptions | undefined;

parentPort?.on('message', (message: CompileSetup | BatchRequest) => {
  if (!('id' in message)) {
    parseOptions = message.parseOptions;
    return;
  }
  const request = message;
  const bytes = new Uint8Array(request.buffer);
  const results = request.files.map((file, index) => {
    const start = request.offsets[index]!;
    try {
      return compileFile({ file, bytes: bytes.subarray(start, request.offsets[index + 1]) }, parseOptions!);
    } catch (error) {
      return compileFailure(file, `${error instanceof Error ? error.name : 'a non-Error value'} thrown`);
    }
  });
  const reply: BatchResult = { id: request.id, results };
  parentPort!.postMessage(reply);
});
