// Worker thread of parse-pool.ts: parses the chunks of manifest files the main thread sends, answers with the results.
import { parentPort } from 'node:worker_threads';
import { parseManifestBytes, type ParseOptions } from '../core/manifest/parse.js';
import type { ParseTask } from './parse-pool.js';

parentPort?.on('message', (message: { from: number; tasks: ParseTask[]; options: ParseOptions }) => {
  const parsed = message.tasks.map((task) => parseManifestBytes(task.path, task.bytes, message.options));
  parentPort!.postMessage({ from: message.from, parsed });
});
