// Settings resolution: flags beat environment variables, which beat the config file (design.md §3).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { parseDuration } from '../core/duration.js';
import { UsageError } from '../core/errors.js';
import type { OptionSpec, ParsedArgs } from './command.js';

/** The shipped defaults, `config/default.yaml` beside the package. */
export const DEFAULT_CONFIG_PATH = fileURLToPath(new URL('../../config/default.yaml', import.meta.url));

/** One setting: its flag, environment variable, config-file key and how to read it. */
interface SettingDef {
  flag: string;
  env?: string;
  key: string;
  kind: 'string' | 'int' | 'duration' | 'boolean' | 'enum';
  choices?: readonly string[];
  description: string;
  placeholder?: string;
}

export const SETTINGS = {
  apiUrl: { flag: 'api-url', env: 'CONVERGE_API_URL', key: 'api_url', kind: 'string', placeholder: 'URL', description: 'base URL of the service, or "embedded" for the in-process emulator' },
  apiKey: { flag: 'api-key', env: 'CONVERGE_API_KEY', key: 'api_key', kind: 'string', placeholder: 'KEY', description: 'API key sent as X-Api-Key (prefer the environment variable)' },
  tenantId: { flag: 'tenant-id', env: 'CONVERGE_TENANT_ID', key: 'tenant_id', kind: 'string', placeholder: 'UUID', description: 'workspace sent as X-Tenant-Id when the key spans several' },
  redisUrl: { flag: 'redis-url', env: 'REDIS_URL', key: 'redis_url', kind: 'string', placeholder: 'URL', description: 'Redis for jobs and applied state' },
  redisPrefix: { flag: 'redis-prefix', env: 'CONVERGE_REDIS_PREFIX', key: 'redis_prefix', kind: 'string', placeholder: 'PREFIX', description: 'key prefix; keep the {hash tag} for Redis Cluster' },
  resync: { flag: 'resync', env: 'CONVERGE_RESYNC', key: 'resync', kind: 'duration', placeholder: 'DURATION', description: 'daemon: full reconcile interval' },
  debounce: { flag: 'debounce', env: 'CONVERGE_DEBOUNCE', key: 'debounce', kind: 'duration', placeholder: 'DURATION', description: 'daemon: quiet time after a file change before planning' },
  concurrency: { flag: 'concurrency', env: 'CONVERGE_CONCURRENCY', key: 'concurrency', kind: 'int', placeholder: 'N', description: 'jobs in flight per worker process' },
  httpPort: { flag: 'http-port', env: 'CONVERGE_HTTP_PORT', key: 'http_port', kind: 'int', placeholder: 'N', description: 'daemon: port of /healthz, /readyz, /metrics, /status' },
  httpHost: { flag: 'http-host', env: 'CONVERGE_HTTP_HOST', key: 'http_host', kind: 'string', placeholder: 'ADDR', description: 'daemon: address the status server binds to' },
  logLevel: { flag: 'log-level', env: 'CONVERGE_LOG_LEVEL', key: 'log_level', kind: 'enum', choices: ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'], placeholder: 'LEVEL', description: 'log level' },
  allowLocalDiscovery: { flag: 'allow-local-discovery', env: 'CONVERGE_ALLOW_LOCAL_DISCOVERY', key: 'allow_local_discovery', kind: 'boolean', description: 'let MCP discovery use http and reach loopback or private addresses' },
  allowLiteralSecrets: { flag: 'allow-literal-secrets', env: 'CONVERGE_ALLOW_LITERAL_SECRETS', key: 'allow_literal_secrets', kind: 'boolean', description: 'accept literal secret values in manifests (local use only)' },
  emulatorState: { flag: 'emulator-state', env: 'CONVERGE_EMULATOR_STATE', key: 'emulator_state', kind: 'string', placeholder: 'FILE', description: 'with --api-url embedded: seed the in-process emulator from this state file' },
  driftPolicy: { flag: 'drift', env: 'CONVERGE_DRIFT', key: 'drift', kind: 'enum', choices: ['heal', 'report'], placeholder: 'POLICY', description: 'daemon: heal (revert drift) or report it only' },
  requestTimeout: { flag: 'request-timeout', env: 'CONVERGE_REQUEST_TIMEOUT', key: 'request_timeout', kind: 'duration', placeholder: 'DURATION', description: 'timeout of one request to the service' },
  attempts: { flag: 'attempts', env: 'CONVERGE_ATTEMPTS', key: 'attempts', kind: 'int', placeholder: 'N', description: 'attempts per job before it fails' },
  backoff: { flag: 'backoff', env: 'CONVERGE_BACKOFF', key: 'backoff', kind: 'duration', placeholder: 'DURATION', description: 'first retry delay of a job (doubles, with jitter)' },
  globalRate: { flag: 'global-rate', env: 'CONVERGE_GLOBAL_RATE', key: 'global_rate', kind: 'int', placeholder: 'N', description: 'writes per second across all worker processes (0: no limit)' },
  waitTimeout: { flag: 'wait-timeout', env: 'CONVERGE_WAIT_TIMEOUT', key: 'wait_timeout', kind: 'duration', placeholder: 'DURATION', description: 'apply --wait: how long to wait for new revisions' },
  shutdownTimeout: { flag: 'shutdown-timeout', env: 'CONVERGE_SHUTDOWN_TIMEOUT', key: 'shutdown_timeout', kind: 'duration', placeholder: 'DURATION', description: 'daemon and worker: deadline for active jobs on SIGTERM' },
  jobLock: { flag: 'job-lock', env: 'CONVERGE_JOB_LOCK', key: 'job_lock', kind: 'duration', placeholder: 'DURATION', description: 'daemon: lock time of a running job; jobs of a worker that died are retried after about this long' },
} as const satisfies Record<string, SettingDef>;

export type SettingName = keyof typeof SETTINGS;

export interface Settings {
  apiUrl: string;
  apiKey: string | undefined;
  tenantId: string | undefined;
  redisUrl: string;
  redisPrefix: string;
  resync: number;
  debounce: number;
  concurrency: number;
  httpPort: number;
  httpHost: string;
  logLevel: string;
  allowLocalDiscovery: boolean;
  allowLiteralSecrets: boolean;
  emulatorState: string | undefined;
  driftPolicy: 'heal' | 'report';
  requestTimeout: number;
  attempts: number;
  backoff: number;
  globalRate: number;
  waitTimeout: number;
  shutdownTimeout: number;
  jobLock: number;
  /** Which config file was read. */
  configFile: string;
}

/** CLI options for the named settings, plus --config; for a command's `options` table. */
export function settingOptions(...names: SettingName[]): Record<string, OptionSpec> {
  const options: Record<string, OptionSpec> = {
    config: { type: 'string', placeholder: 'FILE', description: 'config file (default: config/default.yaml; env CONVERGE_CONFIG)' },
  };
  for (const name of names) {
    const def: SettingDef = SETTINGS[name];
    options[def.flag] = {
      type: def.kind === 'boolean' ? 'boolean' : 'string',
      placeholder: def.placeholder,
      description: `${def.description}${def.env ? ` (env ${def.env})` : ''}`,
    };
  }
  return options;
}

const ConfigFile = z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()]));

function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UsageError(`config file ${path}: cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`, { cause: error });
  }
  let data: unknown;
  try {
    data = parseYaml(text) ?? {};
  } catch (error) {
    throw new UsageError(`config file ${path}: ${(error as Error).message.split('\n')[0]}`);
  }
  const parsed = ConfigFile.safeParse(data);
  if (!parsed.success) throw new UsageError(`config file ${path}: expected a mapping of setting names to plain values`);
  const known = new Set<string>(Object.values(SETTINGS).map((d) => d.key));
  for (const key of Object.keys(parsed.data)) {
    if (!known.has(key)) throw new UsageError(`config file ${path}: unknown setting "${key}"; known: ${[...known].join(', ')}`);
  }
  return parsed.data;
}

function convert(name: SettingName, raw: unknown, origin: string): unknown {
  const def: SettingDef = SETTINGS[name];
  if (raw === null || raw === undefined || raw === '') return undefined;
  const text = String(raw);
  switch (def.kind) {
    case 'string':
      return text;
    case 'boolean':
      if (typeof raw === 'boolean') return raw;
      if (/^(1|true|yes|on)$/i.test(text)) return true;
      if (/^(0|false|no|off)$/i.test(text)) return false;
      throw new UsageError(`${origin}: "${text}" is not a boolean; use true or false`);
    case 'int': {
      if (!/^\d+$/.test(text)) throw new UsageError(`${origin}: "${text}" is not a whole number`);
      return Number(text);
    }
    case 'duration':
      return parseDuration(text, origin);
    case 'enum':
      if (!def.choices!.includes(text)) throw new UsageError(`${origin}: "${text}" is not one of ${def.choices!.join(', ')}`);
      return text;
  }
}

/** Resolves every setting: flag, then environment variable, then config file. */
export function resolveSettings(args: ParsedArgs, env: NodeJS.ProcessEnv): Settings {
  const configFile = (args.values.config as string | undefined) ?? env.CONVERGE_CONFIG ?? DEFAULT_CONFIG_PATH;
  const fileValues = readConfigFile(configFile);
  const fallback = configFile === DEFAULT_CONFIG_PATH ? fileValues : { ...readConfigFile(DEFAULT_CONFIG_PATH), ...fileValues };
  const out: Record<string, unknown> = { configFile };
  for (const name of Object.keys(SETTINGS) as SettingName[]) {
    const def: SettingDef = SETTINGS[name];
    const flagValue = args.values[def.flag];
    const envValue = def.env ? env[def.env] : undefined;
    let value: unknown;
    if (flagValue !== undefined) value = convert(name, flagValue, `--${def.flag}`);
    if (value === undefined && envValue !== undefined && envValue !== '') value = convert(name, envValue, def.env!);
    if (value === undefined) value = convert(name, fallback[def.key], `${configFile}: ${def.key}`);
    out[name] = value;
  }
  for (const name of ['apiUrl', 'redisUrl', 'redisPrefix', 'httpHost', 'logLevel', 'driftPolicy'] as const) {
    if (out[name] === undefined) throw new UsageError(`setting ${SETTINGS[name].key} has no value; set --${SETTINGS[name].flag}`);
  }
  for (const name of ['resync', 'debounce', 'concurrency', 'httpPort', 'requestTimeout', 'attempts', 'backoff', 'globalRate', 'waitTimeout', 'shutdownTimeout', 'jobLock'] as const) {
    if (out[name] === undefined) throw new UsageError(`setting ${SETTINGS[name].key} has no value; set --${SETTINGS[name].flag}`);
  }
  out.allowLocalDiscovery ??= false;
  out.allowLiteralSecrets ??= false;
  return out as unknown as Settings;
}
