// Lists a manifest directory while the command's own modules load, and starts the compile threads the moment the walk has found enough files for them to pay.
import { resolve } from 'node:path';
import { CompileThreads, POOL_MIN_FILES } from './compile-threads.js';
import { listManifestFiles, type ManifestListing } from './manifest-listing.js';

/**
 * One directory's listing, begun before the load that reads it (src/observe/manifests.ts, loadManifestDir takes it):
 * the walk runs while this thread loads the parser and the schemas, and at its POOL_MIN_FILES-th manifest file it
 * starts the compile threads, which load theirs meanwhile. A load of fewer files starts none.
 */
export class ListingAhead {
  /** The directory listed, absolute. */
  readonly dir: string;
  /** The walk's listing; a failure (no such directory) is the load's to report when it awaits it. */
  readonly listing: Promise<ManifestListing>;
  private started: CompileThreads | undefined;
  /** Set by close(): a walk still under way starts no threads after it. */
  private closed = false;

  constructor(dir: string, threads: () => CompileThreads | undefined = () => CompileThreads.start()) {
    this.dir = resolve(dir);
    this.listing = listManifestFiles(this.dir, undefined, (count) => {
      if (count === POOL_MIN_FILES && !this.closed) this.started = threads();
    });
    // Not an unhandled rejection while no one awaits it yet: the load that awaits it sees the failure.
    this.listing.catch(() => undefined);
  }

  /** The compile threads the walk started, if it found POOL_MIN_FILES files. */
  threads(): CompileThreads | undefined {
    return this.started;
  }

  /**
   * Closes the threads it started (the pool that took them may have already), and keeps the walk from starting any
   * after: threads left running would keep the process alive.
   */
  async close(): Promise<void> {
    this.closed = true;
    await this.started?.close();
  }
}
