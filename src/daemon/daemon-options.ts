// What starting the daemon takes: its settings, the service it talks to, and the options of startDaemon.
import type { Server } from 'node:http';
import type { ChangeWindow } from '../core/windows.js';
import type { Logger } from 'pino';
import type { RequestInfo, ServiceClient } from '../service/client.js';
import type { DriftPolicy } from '../core/model.js';
import type { WorkerSettings } from '../jobs/runner/worker.js';
import type { Environment } from '../observe/environment.js';
import type { Deliver } from '../core/notify/events.js';
import type { ReceiverConfig } from '../core/notify/receivers.js';
import type { WaveLimit } from '../core/waves.js';

/** Defaults of health_poll and progress_deadline (config/default.yaml holds the same). */
export const HEALTH_POLL_MS = 5_000;
export const PROGRESS_DEADLINE_MS = 30 * 60_000;

/** The settings the daemon reads (src/cli/settings.ts Settings satisfies it). */
export interface DaemonSettings extends WorkerSettings {
  apiUrl: string;
  tenantId: string | undefined;
  resync: number;
  debounce: number;
  httpPort: number;
  httpHost: string;
  driftPolicy: DriftPolicy;
  shutdownTimeout: number;
  jobLock: number;
  allowLocalDiscovery: boolean;
  /** name_prefix: only deployments whose names start with it are listed, planned and reported as orphans. */
  namePrefix?: string | undefined;
  /** A new revision not active after this long is degraded (ProgressDeadlineExceeded); default 30 minutes. */
  progressDeadline?: number;
  /** How often building revisions are read; default 5 s. */
  healthPoll?: number;
  /** adopt, prune, max_deletes, prune_tracing_projects (see src/daemon/cycle/cycle.ts; default: auto, prune off). */
  adopt?: 'auto' | 'explicit';
  prune?: boolean;
  maxDeletes?: number;
  /** prune_grace (ms) and prune_mode (src/core/prune-grace.ts; default 60 s, auto). */
  pruneGrace?: number;
  pruneMode?: 'auto' | 'confirm';
  pruneTracingProjects?: boolean;
  /** wave_max_in_flight: at most this many writes of one wave in flight at once (docs/rollouts.md; none: the whole wave). */
  waveMaxInFlight?: WaveLimit | undefined;
  /** The leader lease time (ms): only its holder watches, plans and enqueues. */
  lease: number;
  /** This replica's name in the lease (default hostname:pid). */
  replicaId?: string | undefined;
  /** Change windows (docs/rollouts.md): when the daemon's writes wait. */
  windows?: readonly ChangeWindow[];
}

/** The service the daemon talks to (opened by the CLI: a URL, or the embedded emulator). */
export interface DaemonService {
  client: ServiceClient;
  url: string;
  close(): Promise<void>;
  /** Drops the connections now: requests in flight fail (the stop, before handing active jobs back). */
  dropConnections(): Promise<void>;
}

export interface DaemonOptions {
  dir: string;
  /** Variables files and overlay directories: read with `dir`, and watched like it (docs/environments.md). */
  environment?: Environment | undefined;
  settings: DaemonSettings;
  env: NodeJS.ProcessEnv;
  log: Logger;
  /**
   * The status port the command bound before loading the daemon (src/daemon/server/status-port.ts): the status server
   * takes it over; absent, the status server binds `httpHost:httpPort` itself.
   */
  listening?: Server | undefined;
  /** True for the in-process emulator: jobs and applied state then live under a private Redis prefix. */
  embedded: boolean;
  /** Opens the service with the daemon's request hook (metrics, readiness). */
  openService(onRequest: (info: RequestInfo) => void): Promise<DaemonService>;
  /**
   * Notifications (docs/notifications.md): the receivers as configured (names and filters) and the sender, which
   * alone holds their URLs and secrets. Absent or no receiver: no delivery queue is opened.
   */
  notify?: { receivers: readonly ReceiverConfig[]; deliver: Deliver; close(): Promise<void> } | undefined;
}
