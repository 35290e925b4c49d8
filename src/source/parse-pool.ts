// Parses manifest files on worker threads as well as the main thread when there are many (YAML parsing is CPU-bound).
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { parseManifestBytes, type ManifestResult, type ParseOptions } from '../core/manifest/parse.js';

/** One file to parse: its path relative to the manifest directory (as diagnostics name it) and its bytes. */
export interface ParseTask {
  path: string;
  bytes: Uint8Array;
}

/** Below this many files, starting threads (each loads the parser and the schemas) costs more than it saves. */
export const PARALLEL_MIN_FILES = 2000;
const MAX_WORKERS = 3;
/** Files per message to a worker; a worker has at most two chunks in hand. */
const CHUNK = 100;
/** The main thread yields to the event loop after about this long, so requests in flight are answered meanwhile. */
const YIELD_EVERY_MS = 5;
const WORKER_URL = new URL('./parse-worker.js', import.meta.url);

/** Worker threads worth starting for `count` files: none for few files, on one core, or from the TypeScript sources. */
export function parseThreads(count: number): number {
  if (count < PARALLEL_MIN_FILES) return 0;
  const threads = Math.min(MAX_WORKERS, availableParallelism() - 1);
  if (threads < 1 || !existsSync(fileURLToPath(WORKER_URL))) return 0;
  return threads;
}

function yieldNow(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Parses every task, results in task order. The main thread takes chunks like the workers do, so nothing waits
 * for a thread to start; a chunk a worker could not finish (it failed to start or crashed) is parsed here.
 */
export async function parseAll(
  tasks: readonly ParseTask[],
  options: ParseOptions,
  threads = parseThreads(tasks.length),
  /** Counts the files the worker threads parsed (tests, logs). */
  counts: { byThreads: number } = { byThreads: 0 },
): Promise<ManifestResult[]> {
  const results = new Array<ManifestResult | undefined>(tasks.length);
  let next = 0;
  const take = (): number | undefined => {
    if (next >= tasks.length) return undefined;
    const from = next;
    next += CHUNK;
    return from;
  };
  let lastYield = performance.now();
  const parseHere = async (from: number, to: number): Promise<void> => {
    for (let i = from; i < to; i++) {
      if (results[i] === undefined) results[i] = parseManifestBytes(tasks[i]!.path, tasks[i]!.bytes, options);
      if (performance.now() - lastYield > YIELD_EVERY_MS) {
        await yieldNow();
        lastYield = performance.now();
      }
    }
  };

  const workers: Worker[] = [];
  for (let i = 0; i < threads; i++) {
    try {
      workers.push(new Worker(WORKER_URL));
    } catch {
      // No thread: the main thread parses it all.
    }
  }
  const lane = (worker: Worker): Promise<void> =>
    new Promise((resolve) => {
      let inHand = 0;
      let done = false;
      const finish = (): void => {
        if (done) return;
        done = true;
        resolve();
      };
      const send = (): void => {
        while (inHand < 2) {
          const from = take();
          if (from === undefined) break;
          inHand++;
          worker.postMessage({ from, tasks: tasks.slice(from, from + CHUNK), options });
        }
        if (inHand === 0) finish();
      };
      worker.on('message', (message: { from: number; parsed: ManifestResult[] }) => {
        message.parsed.forEach((result, i) => (results[message.from + i] = result));
        counts.byThreads += message.parsed.length;
        inHand--;
        send();
      });
      // Whatever it had in hand is parsed by the main thread below.
      worker.once('error', finish);
      worker.once('exit', finish);
      worker.once('online', send);
    });

  try {
    const main = (async () => {
      for (let from = take(); from !== undefined; from = take()) await parseHere(from, Math.min(tasks.length, from + CHUNK));
    })();
    await Promise.all([main, ...workers.map(lane)]);
    // Chunks a worker took and never answered.
    await parseHere(0, tasks.length);
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
  return results as ManifestResult[];
}
