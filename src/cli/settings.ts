// Settings resolution: flags beat environment variables, which beat the config file (docs/contracts.md §2).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { LineCounter, parseDocument } from 'yaml';
import { z } from 'zod';
import { parseDuration } from '../core/duration.js';
import { UsageError } from '../core/errors.js';
import { notificationsFromConfig, type ReceiverConfig } from '../core/notify/receivers.js';
import { windowsFromConfig } from '../core/windows-config.js';
import type { ChangeWindow } from '../core/windows.js';
import type { WaveLimit } from '../core/waves.js';
import type { OptionSpec, ParsedArgs } from './command.js';

/** The shipped defaults, `config/default.yaml` beside the package. */
export const DEFAULT_CONFIG_PATH = fileURLToPath(new URL('../../config/default.yaml', import.meta.url));

/** Where one setting comes from (flag, environment variable, config-file key) and how --help shows it. */
interface SourceFields {
  flag: string;
  env: string;
  key: string;
  placeholder?: string;
  description: string;
  /** The words the setting may be (oneOf): what shell completion offers for its flag. */
  choices?: readonly string[];
}

/** A setting's source, and its flag's parseArgs type (which the setting's kind decides). */
export interface SettingSource extends SourceFields {
  /** A boolean setting is a switch; a list is a flag given once per value; every other takes a value. */
  flagType: 'string' | 'boolean' | 'list';
}

/** Each setting's schema is registered here with its source; `settingSource` looks it up. */
const SOURCES = z.registry<SettingSource>();

/**
 * A setting's raw value: the first of flag, environment variable and config file that holds one, and
 * `origin`, the name errors print (`--concurrency`, `CONVERGE_CONCURRENCY`, `FILE: concurrency`).
 */
function candidate(source: SourceFields) {
  return z.object(
    { value: z.union([z.string(), z.number(), z.boolean()]), origin: z.string() },
    { error: (issue) => (issue.input === undefined ? `setting ${source.key} has no value; set --${source.flag}` : undefined) },
  );
}

type RawValue = string | number | boolean;

/**
 * Reads a raw value with `read`, which throws UsageError naming the origin (as parseDuration does);
 * the error becomes the schema's issue.
 */
function readWith<T>(source: SourceFields, read: (value: RawValue, origin: string) => T) {
  return candidate(source).transform(({ value, origin }, ctx) => {
    try {
      return read(value, origin);
    } catch (error) {
      if (!(error instanceof UsageError)) throw error;
      ctx.issues.push({ code: 'custom', input: value, message: error.message });
      return z.NEVER;
    }
  });
}

/** Registers a setting's schema with its source. */
function register<S extends z.ZodType>(schema: S, source: SourceFields, flagType: SettingSource['flagType']): S {
  SOURCES.add(schema, { ...source, flagType });
  return schema;
}

/** Text; required. */
function text(source: SourceFields) {
  return register(readWith(source, String), source, 'string');
}

/** Text that may be absent: then undefined. */
function optionalText(source: SourceFields) {
  return register(
    candidate(source)
      .optional()
      .transform((found) => (found === undefined ? undefined : String(found.value))),
    source,
    'string',
  );
}

/** A whole number from `min` to `max`. */
function wholeNumber(source: SourceFields, min = 0, max = Number.MAX_SAFE_INTEGER) {
  const read = (value: RawValue, origin: string): number => {
    const text = String(value);
    if (!/^\d+$/.test(text)) throw new UsageError(`${origin}: "${text}" is not a whole number`);
    const number = Number(text);
    if (number < min) throw new UsageError(`${origin}: ${text} is too small; give at least ${min}`);
    if (number > max) throw new UsageError(`${origin}: ${text} is too large; give at most ${max}`);
    return number;
  };
  return register(readWith(source, read), source, 'string');
}

/** A limit of a wave's writes in flight: a count (at least 1) or a percentage of the wave (1% to 100%); absent: none. */
function waveLimit(source: SourceFields) {
  const read = (value: RawValue, origin: string): WaveLimit => {
    const text = String(value).trim();
    const match = /^(\d+)(%?)$/.exec(text);
    const number = match ? Number(match[1]) : Number.NaN;
    if (!match || number < 1 || (match[2] === '%' && number > 100)) {
      throw new UsageError(`${origin}: "${text}" is not a count or a percentage of the wave; give e.g. 2 or 25% (at least 1, at most 100%)`);
    }
    return match[2] === '%' ? { percent: number } : { count: number };
  };
  return register(
    candidate(source)
      .optional()
      .transform((found, ctx) => {
        if (found === undefined) return undefined;
        try {
          return read(found.value, found.origin);
        } catch (error) {
          if (!(error instanceof UsageError)) throw error;
          ctx.issues.push({ code: 'custom', input: found.value, message: error.message });
          return z.NEVER;
        }
      }),
    source,
    'string',
  );
}

/** A TCP port: 1 to 65535, or 0 for any free port. */
function port(source: SourceFields) {
  const read = (value: RawValue, origin: string): number => {
    const text = String(value);
    if (!/^\d+$/.test(text) || Number(text) > 65_535) throw new UsageError(`${origin}: "${text}" is not a port; give 1 to 65535 (0: any free port)`);
    return Number(text);
  };
  return register(readWith(source, read), source, 'string');
}

/** A duration with a unit (300ms, 5s, 5m), in milliseconds, at least `minMs`. */
function duration(source: SourceFields, minMs = 0) {
  const read = (value: RawValue, origin: string): number => {
    const ms = parseDuration(String(value), origin);
    if (ms < minMs) throw new UsageError(`${origin}: "${String(value)}" is too short; give at least ${formatMs(minMs)}`);
    return ms;
  };
  return register(readWith(source, read), source, 'string');
}

function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

/** A switch: true, yes, on or 1; false, no, off or 0; false when absent. */
function onOff(source: SourceFields) {
  const read = (value: RawValue, origin: string): boolean => {
    if (typeof value === 'boolean') return value;
    const text = String(value);
    if (/^(1|true|yes|on)$/i.test(text)) return true;
    if (/^(0|false|no|off)$/i.test(text)) return false;
    throw new UsageError(`${origin}: "${text}" is not a boolean; use true or false`);
  };
  return register(readWith(source, read).default(false), source, 'boolean');
}

/** One of `choices`. */
function oneOf<const C extends readonly string[]>(choices: C, source: SourceFields) {
  const read = (value: RawValue, origin: string): C[number] => {
    const text = String(value);
    const choice = choices.find((c) => c === text);
    if (choice === undefined) throw new UsageError(`${origin}: "${text}" is not one of ${choices.join(', ')}`);
    return choice;
  };
  return register(readWith(source, read), { ...source, choices }, 'string');
}

/**
 * Paths, in order: the flag given once per path, the environment variable's comma-separated paths, or a list in the
 * config file; none: an empty list. Relative paths are relative to the working directory.
 */
function pathList(source: SourceFields) {
  return register(
    z
      .object({ value: z.union([z.string(), z.array(z.string())]), origin: z.string() })
      .optional()
      .transform((found) => {
        if (found === undefined) return [];
        const values = Array.isArray(found.value) ? found.value : found.value.split(',');
        return values.map((value) => value.trim()).filter((value) => value !== '');
      }),
    source,
    'list',
  );
}

/** Log levels, least severe first. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

/**
 * Every setting: its source and how its value is read. The `Settings` type is inferred from this table;
 * config/default.yaml holds every default, docs/settings.md's table lists them all (settings.test.ts checks both).
 */
export const SETTINGS = z.object({
  apiUrl: optionalText({ flag: 'api-url', env: 'CONVERGE_API_URL', key: 'api_url', placeholder: 'URL', description: 'base URL of the service (no default), or "embedded" for an in-process emulator that forgets everything on exit' }),
  apiKey: optionalText({ flag: 'api-key', env: 'CONVERGE_API_KEY', key: 'api_key', placeholder: 'KEY', description: 'API key sent as X-Api-Key (prefer the environment variable)' }),
  tenantId: optionalText({ flag: 'tenant-id', env: 'CONVERGE_TENANT_ID', key: 'tenant_id', placeholder: 'UUID', description: 'workspace sent as X-Tenant-Id when the key spans several' }),
  redisUrl: text({ flag: 'redis-url', env: 'REDIS_URL', key: 'redis_url', placeholder: 'URL', description: 'Redis for jobs and applied state' }),
  redisPrefix: text({ flag: 'redis-prefix', env: 'CONVERGE_REDIS_PREFIX', key: 'redis_prefix', placeholder: 'PREFIX', description: 'key prefix; keep the {hash tag} for Redis Cluster' }),
  redisCluster: onOff({ flag: 'redis-cluster', env: 'CONVERGE_REDIS_CLUSTER', key: 'redis_cluster', description: 'redis_url is one node of a Redis Cluster (the prefix must start with a {hash tag})' }),
  namePrefix: optionalText({ flag: 'name-prefix', env: 'CONVERGE_NAME_PREFIX', key: 'name_prefix', placeholder: 'PREFIX', description: 'manage only deployments whose names start with this: listing, planning and orphans' }),
  resync: duration({ flag: 'resync', env: 'CONVERGE_RESYNC', key: 'resync', placeholder: 'DURATION', description: 'daemon: full reconcile interval (at least 1s)' }, 1000),
  debounce: duration({ flag: 'debounce', env: 'CONVERGE_DEBOUNCE', key: 'debounce', placeholder: 'DURATION', description: 'daemon: quiet time after a file change before planning (at least 10ms)' }, 10),
  concurrency: wholeNumber({ flag: 'concurrency', env: 'CONVERGE_CONCURRENCY', key: 'concurrency', placeholder: 'N', description: 'jobs in flight per worker process (at least 1)' }, 1),
  httpPort: port({ flag: 'http-port', env: 'CONVERGE_HTTP_PORT', key: 'http_port', placeholder: 'N', description: 'daemon: port of /healthz, /readyz, /metrics, /status (1 to 65535; 0: any free port)' }),
  httpHost: text({ flag: 'http-host', env: 'CONVERGE_HTTP_HOST', key: 'http_host', placeholder: 'ADDR', description: 'daemon: address the status server binds to' }),
  logLevel: oneOf(LOG_LEVELS, { flag: 'log-level', env: 'CONVERGE_LOG_LEVEL', key: 'log_level', placeholder: 'LEVEL', description: 'log level' }),
  allowLocalDiscovery: onOff({ flag: 'allow-local-discovery', env: 'CONVERGE_ALLOW_LOCAL_DISCOVERY', key: 'allow_local_discovery', description: 'let MCP discovery use http and reach loopback or private addresses' }),
  allowLiteralSecrets: onOff({ flag: 'allow-literal-secrets', env: 'CONVERGE_ALLOW_LITERAL_SECRETS', key: 'allow_literal_secrets', description: 'accept literal secret values in manifests (local use only)' }),
  allowPartial: onOff({ flag: 'allow-partial', env: 'CONVERGE_ALLOW_PARTIAL', key: 'allow_partial', description: 'apply: write the resources of the files that load although another file fails to load (default: nothing is written); nothing is deleted either way' }),
  autoApprove: onOff({ flag: 'auto-approve', env: 'CONVERGE_AUTO_APPROVE', key: 'auto_approve', description: 'apply: write without asking "yes" on a terminal (apply asks only when stdin and stdout are terminals, the output is text and the plan was made now)' }),
  emulatorState: optionalText({ flag: 'emulator-state', env: 'CONVERGE_EMULATOR_STATE', key: 'emulator_state', placeholder: 'FILE', description: 'with --api-url embedded: seed the in-process emulator from this state file' }),
  driftPolicy: oneOf(['heal', 'report'], { flag: 'drift', env: 'CONVERGE_DRIFT', key: 'drift', placeholder: 'POLICY', description: 'daemon: heal (revert drift) or report it only' }),
  requestTimeout: duration({ flag: 'request-timeout', env: 'CONVERGE_REQUEST_TIMEOUT', key: 'request_timeout', placeholder: 'DURATION', description: 'timeout of one request to the service' }),
  attempts: wholeNumber({ flag: 'attempts', env: 'CONVERGE_ATTEMPTS', key: 'attempts', placeholder: 'N', description: 'attempts per job before it fails (at least 1)' }, 1),
  backoff: duration({ flag: 'backoff', env: 'CONVERGE_BACKOFF', key: 'backoff', placeholder: 'DURATION', description: 'first retry delay of a job (doubles, with jitter)' }),
  maxBackoff: duration({ flag: 'max-backoff', env: 'CONVERGE_MAX_BACKOFF', key: 'max_backoff', placeholder: 'DURATION', description: 'longest retry delay of a job, however many attempts failed (a Retry-After is still waited out); at most 5m' }, 1),
  globalRate: wholeNumber({ flag: 'global-rate', env: 'CONVERGE_GLOBAL_RATE', key: 'global_rate', placeholder: 'N', description: 'writes per second across all worker processes (0: no limit)' }),
  waitTimeout: duration({ flag: 'wait-timeout', env: 'CONVERGE_WAIT_TIMEOUT', key: 'wait_timeout', placeholder: 'DURATION', description: 'apply --wait: how long to wait for new revisions and rollouts already in progress' }),
  shutdownTimeout: duration({ flag: 'shutdown-timeout', env: 'CONVERGE_SHUTDOWN_TIMEOUT', key: 'shutdown_timeout', placeholder: 'DURATION', description: 'daemon and worker: deadline for active jobs on SIGTERM' }),
  progressDeadline: duration({ flag: 'progress-deadline', env: 'CONVERGE_PROGRESS_DEADLINE', key: 'progress_deadline', placeholder: 'DURATION', description: 'a new revision not active after this long is degraded (ProgressDeadlineExceeded)' }, 1000),
  healthPoll: duration({ flag: 'health-poll', env: 'CONVERGE_HEALTH_POLL', key: 'health_poll', placeholder: 'DURATION', description: 'daemon and apply --wait: how often building revisions are read (at least 100ms)' }, 100),
  adopt: oneOf(['auto', 'explicit'], { flag: 'adopt', env: 'CONVERGE_ADOPT', key: 'adopt', placeholder: 'MODE', description: 'auto: take over a live deployment of a declared name at once; explicit: only with the annotation converge/adopt: "true"' }),
  prune: onOff({ flag: 'prune', env: 'CONVERGE_PRUNE', key: 'prune', description: 'delete deployments converge owns whose manifest is gone (apply, run; plan shows them)' }),
  maxDeletes: wholeNumber({ flag: 'max-deletes', env: 'CONVERGE_MAX_DELETES', key: 'max_deletes', placeholder: 'N', description: 'prune: more deletes than this in one run and none is made' }),
  pruneGrace: duration({ flag: 'prune-grace', env: 'CONVERGE_PRUNE_GRACE', key: 'prune_grace', placeholder: 'DURATION', description: 'daemon prune: how long an owned resource must stay undeclared, the manifests unchanged, before it is deleted (at least 100ms)' }, 100),
  pruneMode: oneOf(['auto', 'confirm'], { flag: 'prune-mode', env: 'CONVERGE_PRUNE_MODE', key: 'prune_mode', placeholder: 'MODE', description: 'daemon prune: auto (delete once prune_grace has passed) or confirm (only after converge reconcile --confirm-delete NAME)' }),
  pruneTracingProjects: onOff({ flag: 'prune-tracing-projects', env: 'CONVERGE_PRUNE_TRACING_PROJECTS', key: 'prune_tracing_projects', description: "prune: delete a deployment's tracing project with it" }),
  jobLock: duration({ flag: 'job-lock', env: 'CONVERGE_JOB_LOCK', key: 'job_lock', placeholder: 'DURATION', description: 'daemon: lock time of a running job; jobs of a worker that died are retried after about this long' }),
  flapWindow: duration({ flag: 'flap-window', env: 'CONVERGE_FLAP_WINDOW', key: 'flap_window', placeholder: 'DURATION', description: 'flap guard: how far back writes are looked at for a conflict (at least 1s)' }, 1000),
  flapLimit: wholeNumber({ flag: 'flap-limit', env: 'CONVERGE_FLAP_LIMIT', key: 'flap_limit', placeholder: 'N', description: 'flap guard: writes putting back a change made outside converge allowed per flap window before a conflict stops them (at least 1)' }, 1),
  lease: duration({ flag: 'lease', env: 'CONVERGE_LEASE', key: 'lease', placeholder: 'DURATION', description: 'daemon: leader lease time (at least 1s); a crashed leader is replaced within about this long' }, 1000),
  waveMaxInFlight: waveLimit({ flag: 'wave-max-in-flight', env: 'CONVERGE_WAVE_MAX_IN_FLIGHT', key: 'wave_max_in_flight', placeholder: 'N|P%', description: 'apply --wait and the daemon: at most this many writes of one rollout wave in flight at once, a count or a percentage of the wave (none: the whole wave; docs/rollouts.md)' }),
  vars: pathList({ flag: 'vars', env: 'CONVERGE_VARS', key: 'vars', placeholder: 'FILE', description: 'variables file for ${NAME} in manifests; repeat for more, later files win (docs/environments.md)' }),
  overlays: pathList({ flag: 'overlay', env: 'CONVERGE_OVERLAYS', key: 'overlays', placeholder: 'DIR', description: 'overlay directory merged over the manifests; repeat for more, applied in order (docs/environments.md)' }),
  replicaId: optionalText({ flag: 'replica-id', env: 'CONVERGE_REPLICA_ID', key: 'replica_id', placeholder: 'ID', description: "daemon: this replica's name in the lease, /status and metrics (default: hostname:pid)" }),
});

export type SettingName = keyof typeof SETTINGS.shape;

/** Every setting's name, in table order. */
export const SETTING_NAMES = SETTINGS.keyof().options;

/** The resolved settings: one value per setting, of the type its schema reads, and the config file read. */
export interface Settings extends z.output<typeof SETTINGS> {
  /** Which config file was read. */
  configFile: string;
  /**
   * The settings given by a flag, an environment variable or a config file of the user's (--config,
   * CONVERGE_CONFIG); a value from the shipped config/default.yaml is a default, not a choice.
   */
  explicit: ReadonlySet<SettingName>;
  /** The `notifications:` list of the config file (docs/notifications.md): names of environment variables, no value. */
  notifications: ReceiverConfig[];
  /** The `windows:` list of the config file (docs/rollouts.md, "Change windows"): when automatic writes wait. */
  windows: ChangeWindow[];
}

/** The flag, environment variable and config-file key of one setting. */
export function settingSource(name: SettingName): SettingSource {
  const source = SOURCES.get(SETTINGS.shape[name]);
  if (!source) throw new Error(`setting ${name} has no registered source`);
  return source;
}

/** CLI options for the named settings, plus --config; for a command's `options` table. */
export function settingOptions(...names: SettingName[]): Record<string, OptionSpec> {
  const options: Record<string, OptionSpec> = {
    config: { type: 'string', placeholder: 'FILE', description: 'config file (default: config/default.yaml; env CONVERGE_CONFIG)' },
  };
  for (const name of names) {
    const source = settingSource(name);
    options[source.flag] = {
      type: source.flagType === 'list' ? 'string' : source.flagType,
      ...(source.flagType === 'list' ? { multiple: true } : {}),
      placeholder: source.placeholder,
      ...(source.choices ? { choices: source.choices } : {}),
      description: `${source.description} (env ${source.env})`,
    };
  }
  return options;
}

const ConfigFile = z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(z.string())]));

/** Config-file keys that are not settings: lists read on their own (with file:line:column problems). */
const LIST_KEYS = ['notifications', 'windows'];

interface ConfigFileContents {
  values: Record<string, unknown>;
  notifications: ReceiverConfig[];
  windows: ChangeWindow[];
}

function readConfigFile(path: string): ConfigFileContents {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UsageError(`config file ${path}: cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`, { cause: error });
  }
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines });
  const yamlError = doc.errors[0];
  if (yamlError) throw new UsageError(`config file ${path}: ${yamlError.message.split('\n')[0]}`);
  const data: unknown = doc.toJS() ?? {};
  const mapping = typeof data === 'object' && data !== null && !Array.isArray(data);
  if (!mapping) throw new UsageError(`config file ${path}: expected a mapping of setting names to plain values`);
  const { notifications: _list, windows: _windows, ...plain } = data as Record<string, unknown>;
  const known = SETTING_NAMES.map((name) => settingSource(name).key);
  for (const key of Object.keys(plain)) {
    if (!known.includes(key)) throw new UsageError(`config file ${path}: unknown setting "${key}"; known: ${[...known, ...LIST_KEYS].join(', ')}`);
  }
  const parsed = ConfigFile.safeParse(plain);
  if (!parsed.success) throw new UsageError(`config file ${path}: expected a mapping of setting names to plain values (vars and overlays: lists of paths)`);
  return { values: parsed.data, notifications: notificationsFromConfig(doc, lines, path), windows: windowsFromConfig(doc, lines, path) };
}

/** Empty values (an empty flag or variable, a null or an empty list in the config file) count as not set. */
function isSet(value: unknown): boolean {
  if (Array.isArray(value)) return value.length > 0;
  return value !== undefined && value !== null && value !== '';
}

/** Resolves every setting: flag, then environment variable, then config file. */
export function resolveSettings(args: ParsedArgs, env: NodeJS.ProcessEnv): Settings {
  const configFile = (args.values.config as string | undefined) ?? env.CONVERGE_CONFIG ?? DEFAULT_CONFIG_PATH;
  const file = readConfigFile(configFile);
  const fileValues = file.values;
  const fallback = configFile === DEFAULT_CONFIG_PATH ? fileValues : { ...readConfigFile(DEFAULT_CONFIG_PATH).values, ...fileValues };
  const raw: Record<string, { value: unknown; origin: string } | undefined> = {};
  const explicit = new Set<SettingName>();
  for (const name of SETTING_NAMES) {
    const source = settingSource(name);
    raw[name] = [
      { value: args.values[source.flag], origin: `--${source.flag}` },
      { value: env[source.env], origin: source.env },
      { value: fallback[source.key], origin: `${configFile}: ${source.key}` },
    ].find((c) => isSet(c.value));
    const fromUser = isSet(args.values[source.flag]) || isSet(env[source.env]) || (configFile !== DEFAULT_CONFIG_PATH && isSet(fileValues[source.key]));
    if (fromUser) explicit.add(name);
  }
  const parsed = SETTINGS.safeParse(raw);
  if (!parsed.success) {
    // A value that cannot be read is reported before a setting without one.
    const issue = parsed.error.issues.find((i) => i.code === 'custom') ?? parsed.error.issues[0];
    throw new UsageError(issue?.message ?? 'settings cannot be read');
  }
  return { ...parsed.data, configFile, explicit, notifications: file.notifications, windows: file.windows };
}
