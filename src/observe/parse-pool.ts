// Parses manifest files on the main thread, and on worker threads too when many need the yaml package (CPU-bound).
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { parseManifestBytes, type ManifestResult, type ParseOptions, type ParseTally } from '../core/manifest/parse.js';

/** One file to parse: its path relative to the manifest directory (as diagnostics name it) and its bytes. */
export interface ParseTask {
  path: string;
  bytes: Uint8Array;
}

/**
 * Threads start only for files the fast reader declines (the yaml package takes about 0.3 ms for a 600-byte
 * manifest, the fast reader 50 to 70 us), and only when those left would keep the main thread busy longer than
 * this: a thread takes about 150 ms to load the parser and the schemas, and on two cores it slowed a load of
 * 10,000 plain manifests from 0.7 s to 1 s or more.
 */
const THREADS_WORTH_MS = 1000;
/** What the yaml package takes per manifest file on the main thread (measured on the bench machine). */
const FULL_PARSE_MS = 0.3;
const MAX_WORKERS = 3;
/** Files per message to a worker; a worker has at most two chunks in hand. */
const CHUNK = 100;
/** The main thread yields to the event loop after about this long, so requests in flight are answered meanwhile. */
const YIELD_EVERY_MS = 5;
const WORKER_URL = new URL('./parse-worker.js', import.meta.url);

/** Worker threads that can run here: none on one core, or from the TypeScript sources (no worker script). */
export function parseThreads(): number {
  const threads = Math.min(MAX_WORKERS, availableParallelism() - 1);
  if (threads < 1 || !existsSync(fileURLToPath(WORKER_URL))) return 0;
  return threads;
}

function yieldNow(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Whether threads are worth starting, from the share of files the yaml package had to read so far and the files left. */
export function threadsWorthIt(fullParseShare: number, filesLeft: number): boolean {
  return fullParseShare * filesLeft * FULL_PARSE_MS > THREADS_WORTH_MS;
}

/**
 * Parses every task, results in task order. The main thread takes chunks like the workers do, so nothing waits
 * for a thread to start; a chunk a worker could not finish (it failed to start or crashed) is parsed here.
 * With `threads` undefined, the main thread starts threads after its first chunk if threadsWorthIt says so.
 */
export async function parseAll(
  tasks: readonly ParseTask[],
  options: ParseOptions,
  threads?: number,
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
  const tally: ParseTally = { fullParses: 0 };
  const parseHere = async (from: number, to: number): Promise<void> => {
    for (let i = from; i < to; i++) {
      if (results[i] === undefined) results[i] = parseManifestBytes(tasks[i]!.path, tasks[i]!.bytes, options, tally);
      if (performance.now() - lastYield > YIELD_EVERY_MS) {
        await yieldNow();
        lastYield = performance.now();
      }
    }
  };

  const workers: Worker[] = [];
  const lanes: Promise<void>[] = [];
  const startThreads = (count: number): void => {
    for (let i = 0; i < count; i++) {
      try {
        const worker = new Worker(WORKER_URL);
        workers.push(worker);
        lanes.push(lane(worker));
      } catch {
        // No thread: the main thread parses it all.
      }
    }
  };
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
    if (threads !== undefined) startThreads(threads);
    for (let from = take(); from !== undefined; from = take()) {
      const to = Math.min(tasks.length, from + CHUNK);
      await parseHere(from, to);
      // After its first chunk, the main thread projects the rest from the share of files the fast reader declined.
      if (threads === undefined && from === 0 && threadsWorthIt(tally.fullParses / to, tasks.length - next)) startThreads(parseThreads());
    }
    await Promise.all(lanes);
    // Chunks a worker took and never answered.
    await parseHere(0, tasks.length);
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
  return results as ManifestResult[];
}
