// Compiles many manifest files on every core: a pool of worker threads started for one load when the bytes make it pay, else this thread.
import { compileFile, type ManifestBytes } from '../core/manifest/compile.js';
import type { ManifestResult, ParseOptions } from '../core/manifest/parse.js';
import { compileFailure, packBatch, shareStrings, type BatchResult, type CompileSetup } from './compile-batch.js';
import { CompileThreads, POOL_MIN_BYTES, type CompileThread, type ThreadOptions } from './compile-threads.js';

/** Bytes of files per batch sent to a worker: small enough to spread the files evenly, large enough that messages are few. */
const BATCH_BYTES = 64 * 1024;
/**
 * Near the end of a load a batch is at most this share of the bytes left per compiling thread, down to MIN_BATCH_BYTES,
 * so that the last batches are small and the threads finish together (one thread no longer compiles a whole batch
 * alone at the end).
 */
const SHARES_LEFT = 4;
/** The smallest batch: about a dozen files of one deployment each. */
const MIN_BATCH_BYTES = 8 * 1024;
/** Batches in flight per worker, so that a worker never waits for its next one. */
const IN_FLIGHT = 2;
/** Compiling yields to the event loop after about this long, so requests in flight are answered meanwhile. */
const YIELD_EVERY_MS = 5;

export interface PoolOptions extends ThreadOptions {
  /** Whether this thread compiles batches too, between its other work (default true; false: only the threads do). */
  thisThreadCompiles?: boolean;
}

/** Told each file's result as its compile finishes (in no particular order), while the other files compile; never throws. */
export type OnCompiled = (result: ManifestResult) => void;

/**
 * Worker threads for one load, each compiling the files it is sent (src/observe/compile-worker.ts) with the parse
 * options the pool sends it first. Used once: compile(), then close() (which terminates every thread: no process is
 * kept alive).
 */
export class CompilePool {
  private readonly workers: readonly CompileThread[];

  private constructor(
    private readonly threads: CompileThreads,
    private readonly parseOptions: ParseOptions,
    private readonly thisThreadCompiles: boolean,
  ) {
    this.workers = threads.threads;
    const setup: CompileSetup = { parseOptions };
    for (const worker of this.workers) worker.thread.postMessage(setup);
  }

  /**
   * A pool of threads compiling with `parseOptions`, beside this thread; undefined with fewer than 2 cores (no thread
   * to start) or without the worker script (run from source).
   */
  static start(parseOptions: ParseOptions, options: PoolOptions = {}): CompilePool | undefined {
    const threads = CompileThreads.start(options);
    return threads && CompilePool.taking(threads, parseOptions, options);
  }

  /**
   * A pool of threads started earlier (src/observe/compile-threads.ts: they may still be loading), compiling with
   * `parseOptions`; closing the pool closes them.
   */
  static taking(threads: CompileThreads, parseOptions: ParseOptions, options: PoolOptions = {}): CompilePool {
    return new CompilePool(threads, parseOptions, options.thisThreadCompiles ?? true);
  }

  /**
   * Compiles the files, IN_FLIGHT batches per thread, this thread taking one batch at a time too. A thread that fails turns each file of its unanswered batches
   * into an E_COMPILE diagnostic; the others carry on, and this thread compiles the batches left when none does.
   * `onCompiled` is told each result as its batch comes back (after the thread's next batch is sent).
   */
  async compile(files: readonly ManifestBytes[], onCompiled?: OnCompiled): Promise<ManifestResult[]> {
    const batches = batchesOf(files, this.workers.length + (this.thisThreadCompiles ? 1 : 0));
    const results = new Array<ManifestResult>(files.length);
    /** The diagnostics' texts of this load, each held once (shareStrings). */
    const texts = new Map<string, string>();
    let next = 0;
    const run = (worker: CompileThread): Promise<void> =>
      new Promise<void>((done) => {
        const unanswered = new Set<number>();
        const send = (): void => {
          if (next >= batches.length || worker.failed) return;
          const id = next++;
          const { from, to } = batches[id]!;
          const request = packBatch(id, files.slice(from, to));
          unanswered.add(id);
          worker.thread.postMessage(request, [request.buffer]);
        };
        const onMessage = (reply: BatchResult): void => {
          unanswered.delete(reply.id);
          const from = batches[reply.id]!.from;
          reply.results.forEach((result, offset) => {
            shareStrings(result, files[from + offset]!.file, texts);
            results[from + offset] = result;
          });
          send();
          if (onCompiled) reply.results.forEach(onCompiled);
          if (unanswered.size === 0) finish();
        };
        const finish = (): void => {
          worker.thread.off('message', onMessage);
          worker.onFail = undefined;
          done();
        };
        worker.onFail = (reason) => {
          for (const id of unanswered) {
            const { from, to } = batches[id]!;
            for (let i = from; i < to; i++) results[i] = compileFailure(files[i]!.file, reason);
          }
          unanswered.clear();
          finish();
        };
        worker.thread.on('message', onMessage);
        for (let i = 0; i < IN_FLIGHT; i++) send();
        if (unanswered.size === 0) finish();
      });
    // This thread takes batches too, between its other work (a batch at a time, yielding every few milliseconds): on
    // 2 cores one thread started instead of two, about 0.3 s of CPU saved (docs/performance.md).
    const here = async (): Promise<void> => {
      while (this.thisThreadCompiles && next < batches.length) {
        const id = next++;
        const { from, to } = batches[id]!;
        (await compileHere(files.slice(from, to), this.parseOptions, onCompiled)).forEach(
          (result, offset) => (results[from + offset] = result),
        );
      }
    };
    await Promise.all([...this.workers.map(run), here()]);
    // Batches no thread took (every one failed before they were sent) are compiled here.
    const left = batches.slice(next);
    const rest = await compileHere(
      left.flatMap(({ from, to }) => files.slice(from, to)),
      this.parseOptions,
      onCompiled,
    );
    if (left.length > 0) rest.forEach((result, offset) => (results[left[0]!.from + offset] = result));
    return results;
  }

  /** Terminates every thread. */
  close(): Promise<void> {
    return this.threads.close();
  }
}

/**
 * Compiles each file (its first pass: src/core/manifest/compile.ts), in order; one result per file, a failure an
 * E_COMPILE diagnostic. With `pool` (started early by the caller), in it; else in a pool of its own from
 * POOL_MIN_BYTES, closed before this returns; else in this thread. `onCompiled` is told each result as it is known.
 */
export async function compileFiles(
  files: readonly ManifestBytes[],
  parseOptions: ParseOptions,
  pool?: CompilePool,
  onCompiled?: OnCompiled,
): Promise<ManifestResult[]> {
  if (pool) return pool.compile(files, onCompiled);
  const bytes = files.reduce((sum, file) => sum + file.bytes.length, 0);
  const own = bytes >= POOL_MIN_BYTES ? CompilePool.start(parseOptions) : undefined;
  if (!own) return compileHere(files, parseOptions, onCompiled);
  try {
    return await own.compile(files, onCompiled);
  } finally {
    await own.close();
  }
}

/** Compiles in this thread, yielding to the event loop every few milliseconds. */
async function compileHere(
  files: readonly ManifestBytes[],
  parseOptions: ParseOptions,
  onCompiled?: OnCompiled,
): Promise<ManifestResult[]> {
  const results: ManifestResult[] = [];
  let lastYield = performance.now();
  for (const file of files) {
    if (performance.now() - lastYield > YIELD_EVERY_MS) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      lastYield = performance.now();
    }
    let result: ManifestResult;
    try {
      result = compileFile(file, parseOptions);
    } catch (error) {
      result = compileFailure(file.file, `${error instanceof Error ? error.name : 'a non-Error value'} thrown`);
    }
    results.push(result);
    onCompiled?.(result);
  }
  return results;
}

/**
 * The files cut into batches, in order (each batch's index range): of about BATCH_BYTES, then smaller towards the end,
 * each at most 1/SHARES_LEFT of the bytes left per thread (`threads` compiling), down to MIN_BATCH_BYTES.
 */
function batchesOf(files: readonly ManifestBytes[], threads: number): Array<{ from: number; to: number }> {
  const batches: Array<{ from: number; to: number }> = [];
  let left = files.reduce((sum, file) => sum + file.bytes.length, 0);
  const limit = (): number =>
    Math.min(BATCH_BYTES, Math.max(MIN_BATCH_BYTES, left / (Math.max(threads, 1) * SHARES_LEFT)));
  let cut = limit();
  let from = 0;
  let size = 0;
  files.forEach((file, index) => {
    size += file.bytes.length;
    if (size >= cut) {
      batches.push({ from, to: index + 1 });
      from = index + 1;
      left -= size;
      size = 0;
      cut = limit();
    }
  });
  if (from < files.length) batches.push({ from, to: files.length });
  return batches;
}
