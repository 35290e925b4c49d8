// startEmulator(): the local emulator of the service on node:http, seeded from a state file or an in-memory seed.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConvergeError, UsageError } from '../core/errors.js';
import { DEFAULT_BUILD_MS } from './defaults.js';
import { probeOnlyDiscovery, type DiscoverHook } from './discover.js';
import { checkKnobs, type FaultKnobs, type FaultSite } from './faults.js';
import { createHandler, type Route } from './handler.js';
import type { RequestLogEntry } from './request-log.js';
import { createPersister, readStateText, serializeState, writeFileAtomic, type Persister } from './persist.js';
import { artifactRoutes, logRoutes } from './routes/artifacts.js';
import { deploymentRoutes } from './routes/deployments.js';
import { integrationRoutes } from './routes/integrations.js';
import { providerRoutes } from './routes/providers.js';
import type { EmulatorSeed, StateFile } from './schema.js';
import { parseStateText, storeFromState, validateSeed } from './state.js';
import { stateFromStore } from './state-snapshot.js';
import type { EmulatorStore } from './store.js';
import type { RevisionOutcome, SecretsPatchMode } from './merge.js';
import type { EchoMode, SecretsMode } from './view.js';

export type { DiscoverHook, ProviderFromDiscovery } from './discover.js';
export type { RequestLogEntry } from './request-log.js';
export type { EmulatorSeed } from './schema.js';
export type { EmulatorStore } from './store.js';
export type { EchoMode, SecretsMode } from './view.js';
export type { SecretsPatchMode } from './merge.js';

export const DEFAULT_REQUEST_LOG_LIMIT = 100_000;

export interface EmulatorOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0 (a free port). */
  port?: number;
  /**
   * Seed from this file (YAML, or JSON for .json) when it exists, and persist every change to it
   * atomically. Secret values and client secrets are persisted only as sha256 hashes.
   */
  stateFile?: string;
  /** Seed from this file when stateFile is absent or does not exist yet; never written. */
  seedFile?: string;
  /** In-memory seed (tests); used like seedFile. */
  seed?: EmulatorSeed;
  /** Added delay per request, plus a uniform share of jitterMs. */
  latencyMs?: number;
  jitterMs?: number;
  /** 0..1: share of requests answered 503 before handling. */
  failRate?: number;
  /** 0..1: share answered 429 with Retry-After before handling. */
  rateLimitRate?: number;
  /** 0..1: share whose socket is destroyed before handling. */
  resetRate?: number;
  /** 0..1: share handled (writes land) whose socket is then destroyed instead of answered. */
  lostResponseRate?: number;
  /** Retry-After of the 429s, default 1. */
  retryAfterSeconds?: number;
  /** Every DELETE (of a deployment, a provider, or an id nothing has) is answered 503 for this long from the start, in ms; default 0. */
  failDeletesMs?: number;
  /** Serve at most this many deployments per page even if limit is larger. */
  pageCap?: number;
  /** How secret values are echoed; default masked ("********"). */
  secrets?: SecretsMode;
  /** Require X-Api-Key (401 without, 403 wrong). */
  apiKey?: string;
  /**
   * Time a new revision takes (QUEUED, BUILDING, DEPLOYING in thirds, then DEPLOYED and active), and a
   * deleted deployment stays AWAITING_DELETE; default 2000 ms. 0: at once.
   */
  buildMs?: number;
  /** New revisions of deployments whose name matches end in BUILD_FAILED (after the building phase). */
  buildFail?: RegExp | string;
  /** New revisions of deployments whose name matches end in DEPLOY_FAILED (checked after buildFail). */
  deployFail?: RegExp | string;
  /** How a non-empty secrets list in a PATCH is applied: merged by name (default) or replacing the stored set. */
  secretsPatch?: SecretsPatchMode;
  /** exact (default): fields come back as sent; real: as the real service echoes them (see EchoMode). */
  echo?: EchoMode;
  /** Only the spec's endpoints: GET by id, DELETE, revisions and the provider list/get/PATCH/DELETE answer 404 or 405. */
  specOnly?: boolean;
  /** Responses leave out tenant_id, as older services do. */
  omitTenantId?: boolean;
  /**
   * Accept the old incomplete create bodies: source_config, source_revision_config and secrets may be
   * left out, and graph_config_path is neither required on create nor refused. Default off.
   */
  lenientCreate?: boolean;
  /** --any-tarball-path: take any source_tarball_path, as older emulators did; default off (only paths it handed out). */
  anyTarballPath?: boolean;
  /** --org-scoped-key: the API key spans several workspaces, so a request without X-Tenant-Id answers 403. */
  orgScopedKey?: boolean;
  /** --max-body: request bodies larger than this many bytes answer 413 (default MAX_BODY_BYTES, 1 MiB). */
  maxBodyBytes?: number;
  /** --build-log-secrets: build logs print the deployment's environment (NAME=value), as a build that dumps it does. */
  buildLogSecrets?: boolean;
  /** RNG of the fault knobs, shared by every draw (default Math.random). */
  random?: () => number;
  /**
   * One RNG per draw site instead of `random`: each knob then sees the same sequence whatever order
   * concurrent requests arrive in, so a seeded run meets the same faults every time.
   */
  randomFor?: (site: FaultSite) => () => number;
  /** MCP discovery for mcp-discover; without it, a guarded reachability probe answers a clear 422. */
  discover?: DiscoverHook;
  /** Lets the fallback probe use http and reach loopback or private addresses (never link-local). */
  allowLocalDiscovery?: boolean;
  /** Time source (ms since epoch) for timestamps and builds; default Date.now. */
  clock?: () => number;
  /** Keep at most this many request log entries (oldest dropped); default 100,000. */
  requestLogLimit?: number;
  /** Called with every request log entry as it is recorded (bodies already redacted). */
  onRequest?: (entry: RequestLogEntry) => void;
  /** Called with unexpected handler errors (answered 500) and failed state file writes. */
  onError?: (error: unknown) => void;
}

export interface RunningEmulator {
  /** http://HOST:PORT, no trailing slash. */
  url: string;
  port: number;
  /** Stops accepting, lets requests in flight finish (briefly), drops connections, flushes the state file. */
  close(): Promise<void>;
  /** From now on, every DELETE is answered 503 for `ms` (before it is handled: nothing is deleted); 0 ends an outage. */
  failDeletes(ms: number): void;
  /** Every request so far (up to requestLogLimit), oldest first. Cleared in place by resetLog(). */
  requestLog: RequestLogEntry[];
  store: EmulatorStore;
  resetLog(): void;
}

async function initialState(options: EmulatorOptions): Promise<{ state: StateFile; file: string; fresh: boolean }> {
  if (options.stateFile) {
    const text = await readStateText(options.stateFile);
    if (text !== null) return { state: parseStateText(text, options.stateFile), file: options.stateFile, fresh: false };
  }
  if (options.seed) return { state: validateSeed(options.seed), file: 'seed', fresh: true };
  if (options.seedFile) {
    const text = await readStateText(options.seedFile);
    if (text === null) throw new UsageError(`seed file ${options.seedFile} does not exist`);
    return { state: parseStateText(text, options.seedFile), file: options.seedFile, fresh: true };
  }
  return { state: validateSeed({}), file: 'seed', fresh: true };
}

function listen(server: Server, host: string, port: number): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException): void => {
      reject(
        new ConvergeError(
          'E_EMULATOR_LISTEN',
          `emulator cannot listen on ${host}:${port} (${error.code ?? error.message})`,
          { cause: error },
        ),
      );
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve(server.address() as AddressInfo);
    });
  });
}

function checkOptions(options: EmulatorOptions): void {
  if (options.pageCap !== undefined && (!Number.isInteger(options.pageCap) || options.pageCap < 1)) {
    throw new UsageError(`pageCap: ${options.pageCap} must be a whole number >= 1`);
  }
  if (options.buildMs !== undefined && (!Number.isFinite(options.buildMs) || options.buildMs < 0)) {
    throw new UsageError(`buildMs: ${options.buildMs} must be a number >= 0`);
  }
  if (options.secrets !== undefined && !['plain', 'masked', 'omitted'].includes(options.secrets)) {
    throw new UsageError(`secrets: "${String(options.secrets)}" is not one of plain, masked, omitted`);
  }
  if (options.secretsPatch !== undefined && !['merge', 'replace'].includes(options.secretsPatch)) {
    throw new UsageError(`secretsPatch: "${String(options.secretsPatch)}" is not one of merge, replace`);
  }
  if (options.echo !== undefined && !['exact', 'real'].includes(options.echo)) {
    throw new UsageError(`echo: "${String(options.echo)}" is not one of exact, real`);
  }
  if (options.apiKey === '')
    throw new UsageError('apiKey: an empty API key would accept nothing; leave it unset instead');
}

function pattern(name: string, value: RegExp | string | undefined): RegExp | null {
  if (value === undefined) return null;
  if (value instanceof RegExp) return value;
  try {
    return new RegExp(value);
  } catch (error) {
    throw new UsageError(`${name}: "${value}" is not a regular expression (${(error as Error).message})`);
  }
}

/** How a new revision of the named deployment ends, from buildFail and deployFail. */
function revisionOutcome(options: EmulatorOptions): (name: string) => RevisionOutcome {
  const buildFail = pattern('buildFail', options.buildFail);
  const deployFail = pattern('deployFail', options.deployFail);
  return (name) => {
    if (buildFail?.test(name)) return 'BUILD_FAILED';
    if (deployFail?.test(name)) return 'DEPLOY_FAILED';
    return 'DEPLOYED';
  };
}

function faultRandom(options: EmulatorOptions): (site: FaultSite) => number {
  const { randomFor } = options;
  if (randomFor === undefined) {
    const shared = options.random ?? Math.random;
    return () => shared();
  }
  const streams = new Map<FaultSite, () => number>();
  return (site) => {
    let stream = streams.get(site);
    if (stream === undefined) streams.set(site, (stream = randomFor(site)));
    return stream();
  };
}

/** The fault knobs of the options, checked. */
function faultKnobs(options: EmulatorOptions): FaultKnobs {
  const knobs: FaultKnobs = {
    latencyMs: options.latencyMs ?? 0,
    jitterMs: options.jitterMs ?? 0,
    failRate: options.failRate ?? 0,
    rateLimitRate: options.rateLimitRate ?? 0,
    resetRate: options.resetRate ?? 0,
    lostResponseRate: options.lostResponseRate ?? 0,
    retryAfterSeconds: options.retryAfterSeconds ?? 1,
    deletesFailUntil: 0,
    random: faultRandom(options),
  };
  checkKnobs(knobs);
  return knobs;
}

interface StatePersistence {
  /** Resolves once the changes so far are in the state file (at once without one); E_EMULATOR_PERSIST when the write fails. */
  persist: () => Promise<void>;
  /** Writes what is not written yet (on close). */
  flush: () => Promise<void>;
}

/** With a state file: a fresh one written at once, and every change of the store written after it. */
async function persistState(options: EmulatorOptions, store: EmulatorStore, fresh: boolean): Promise<StatePersistence> {
  const stateFile = options.stateFile;
  let persister: Persister | null = null;
  if (stateFile) {
    persister = createPersister(
      stateFile,
      () => stateFromStore(store),
      () => store.version,
    );
    if (fresh) await writeFileAtomic(stateFile, serializeState(stateFile, stateFromStore(store)));
    store.onChange(() => {
      persister!.schedule().catch((error: unknown) => options.onError?.(error));
    });
  }
  const persist = async (): Promise<void> => {
    if (!persister) return;
    try {
      await persister.schedule();
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'error';
      throw new ConvergeError('E_EMULATOR_PERSIST', `the emulator could not write its state file (${code})`, {
        cause: error,
      });
    }
  };
  const flush = async (): Promise<void> => {
    if (persister) await persister.flush();
  };
  return { persist, flush };
}

/** The request log, kept to requestLogLimit entries, and the function that records an entry in it. */
function requestRecorder(options: EmulatorOptions): {
  requestLog: RequestLogEntry[];
  record: (entry: RequestLogEntry) => void;
} {
  const requestLog: RequestLogEntry[] = [];
  const logLimit = options.requestLogLimit ?? DEFAULT_REQUEST_LOG_LIMIT;
  const record = (entry: RequestLogEntry): void => {
    if (logLimit > 0) {
      requestLog.push(entry);
      if (requestLog.length > logLimit + Math.ceil(logLimit / 10)) requestLog.splice(0, requestLog.length - logLimit);
    }
    options.onRequest?.(entry);
  };
  return { requestLog, record };
}

/** Every route the options switch on. */
function emulatorRoutes(options: EmulatorOptions, store: EmulatorStore, clock: () => number): Route[] {
  const specOnly = options.specOnly ?? false;
  return [
    ...deploymentRoutes({
      store,
      view: {
        secrets: options.secrets ?? 'masked',
        echo: options.echo ?? 'exact',
        omitTenantId: options.omitTenantId ?? false,
      },
      pageCap: options.pageCap,
      lenientCreate: options.lenientCreate ?? false,
      specOnly,
      clock,
    }),
    ...providerRoutes({
      store,
      discover: options.discover ?? probeOnlyDiscovery({ allowLocal: options.allowLocalDiscovery ?? false }),
      specOnly,
    }),
    ...integrationRoutes(store),
    ...(specOnly ? [] : artifactRoutes({ store, clock, printSecrets: options.buildLogSecrets ?? false })),
    ...(specOnly ? [] : logRoutes({ store, clock, printSecrets: options.buildLogSecrets ?? false })),
  ];
}

/** Stops accepting, lets requests in flight finish (at most 2 s), drops the connections left. */
async function stopServer(server: Server, inflight: ReadonlySet<Promise<void>>): Promise<void> {
  const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const grace = new Promise<void>((resolve) => setTimeout(resolve, 2000).unref());
  await Promise.race([Promise.allSettled([...inflight]), grace]);
  server.closeAllConnections();
  await stopped;
}

/** Starts the emulator; resolves once it listens. */
export async function startEmulator(options: EmulatorOptions = {}): Promise<RunningEmulator> {
  checkOptions(options);
  const knobs = faultKnobs(options);
  const clock = options.clock ?? Date.now;
  function failDeletes(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0)
      throw new UsageError(`failDeletes: ${ms} must be a number of milliseconds >= 0`);
    knobs.deletesFailUntil = ms === 0 ? 0 : clock() + ms;
  }
  failDeletes(options.failDeletesMs ?? 0);
  const buildMs = options.buildMs ?? DEFAULT_BUILD_MS;
  const { state, file, fresh } = await initialState(options);
  const store = storeFromState(state, {
    clock,
    buildMs,
    file,
    secretsPatch: options.secretsPatch ?? 'merge',
    lenient: options.lenientCreate ?? false,
    outcome: revisionOutcome(options),
    anyTarballPath: options.anyTarballPath ?? false,
  });
  const { persist, flush } = await persistState(options, store, fresh);
  const { requestLog, record } = requestRecorder(options);

  let closing = false;
  const handler = createHandler({
    routes: emulatorRoutes(options, store, clock),
    store,
    knobs,
    apiKey: options.apiKey,
    orgScopedKey: options.orgScopedKey ?? false,
    ...(options.maxBodyBytes !== undefined ? { maxBodyBytes: options.maxBodyBytes } : {}),
    clock,
    persist,
    record,
    isClosing: () => closing,
    onError: options.onError,
  });
  const inflight = new Set<Promise<void>>();
  const server = createServer((req, res) => {
    const done = handler(req, res);
    inflight.add(done);
    void done.finally(() => inflight.delete(done));
  });
  const host = options.host ?? '127.0.0.1';
  const address = await listen(server, host, options.port ?? 0);
  const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  let closed: Promise<void> | null = null;
  async function close(): Promise<void> {
    closing = true;
    await stopServer(server, inflight);
    await flush();
  }

  return {
    url: `http://${urlHost}:${address.port}`,
    port: address.port,
    close: () => (closed ??= close()),
    failDeletes,
    requestLog,
    store,
    resetLog: () => {
      requestLog.length = 0;
    },
  };
}
