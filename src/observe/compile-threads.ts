// Starts the compile pool's worker threads without loading the parser here, so a command can start them before its own modules load.
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

/**
 * Below this many bytes to compile, this thread compiles them: a worker thread first loads the parser and the schemas
 * (about 0.3 s of CPU), which compiling about this much here costs (docs/performance.md, "Loading manifests").
 */
export const POOL_MIN_BYTES = 1024 * 1024;
/**
 * A load of at least this many files, none of them cached, starts its pool before it reads them, so that the
 * workers load while the files are read (about 1 MiB of manifests of one deployment each).
 */
export const POOL_MIN_FILES = 2000;
/** The worker script: compile-worker.js beside this module once built; absent when this module runs from its TypeScript source. */
const WORKER = new URL('./compile-worker.js', import.meta.url);

export interface ThreadOptions {
  /** The worker script (default: compile-worker.js beside this module); a missing one means no threads. */
  worker?: URL;
  /** Worker threads (default: os.availableParallelism() - 1, since the thread that starts them compiles too). */
  threads?: number;
}

/** One worker thread, and why it stopped, once it has. */
export interface CompileThread {
  thread: Worker;
  failed?: string;
  /** Called when it fails (the batches it holds are lost). */
  onFail?: (reason: string) => void;
}

/**
 * Worker threads loading the parser and the schemas (src/observe/compile-worker.ts), not told yet what to compile
 * with: the pool that takes them (src/observe/compile-pool.ts) sends the parse options first, then batches.
 */
export class CompileThreads {
  private closing: Promise<void> | undefined;

  private constructor(readonly threads: readonly CompileThread[]) {}

  /** The threads, undefined with fewer than 2 cores (none to start) or without the worker script (run from source). */
  static start(options: ThreadOptions = {}): CompileThreads | undefined {
    const script = options.worker ?? WORKER;
    const count = options.threads ?? availableParallelism() - 1;
    if (count < 1 || !existsSync(fileURLToPath(script))) return undefined;
    return new CompileThreads(
      Array.from({ length: count }, (): CompileThread => {
        const started: CompileThread = { thread: new Worker(script) };
        const fail = (reason: string): void => {
          if (started.failed) return;
          started.failed = reason;
          started.onFail?.(reason);
        };
        started.thread.on('error', (error) => fail(`its worker thread failed: ${error.name}`));
        started.thread.on('exit', (code) => fail(`its worker thread stopped, exit code ${code}`));
        return started;
      }),
    );
  }

  /** Terminates every thread (once: a second call waits for the first). */
  close(): Promise<void> {
    this.closing ??= Promise.all(this.threads.map((started) => started.thread.terminate())).then(() => undefined);
    return this.closing;
  }
}
