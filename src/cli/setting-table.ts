// The table of every setting: its flag, environment variable, config-file key, description and kind
// (docs/settings.md lists them; src/cli/settings.ts resolves them).
import { z } from 'zod';
import {
  duration,
  oneOf,
  onOff,
  optionalText,
  pathList,
  port,
  sourceOf,
  text,
  waveLimit,
  wholeNumber,
  type SettingSource,
} from './setting-kinds.js';

/** Log levels, least severe first. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

/**
 * Every setting: its source and how its value is read. The `Settings` type is inferred from this table;
 * config/default.yaml holds every default, docs/settings.md's table lists them all (settings.test.ts checks both).
 */
export const SETTINGS = z.object({
  apiUrl: optionalText({
    flag: 'api-url',
    env: 'CONVERGE_API_URL',
    key: 'api_url',
    placeholder: 'URL',
    description:
      'base URL of the service (no default), or "embedded" for an in-process emulator that forgets everything on exit',
  }),
  apiKey: optionalText({
    flag: 'api-key',
    env: 'CONVERGE_API_KEY',
    key: 'api_key',
    placeholder: 'KEY',
    description: 'API key sent as X-Api-Key (prefer the environment variable)',
  }),
  tenantId: optionalText({
    flag: 'tenant-id',
    env: 'CONVERGE_TENANT_ID',
    key: 'tenant_id',
    placeholder: 'UUID',
    description: 'workspace sent as X-Tenant-Id when the key spans several',
  }),
  redisUrl: text({
    flag: 'redis-url',
    env: 'REDIS_URL',
    key: 'redis_url',
    placeholder: 'URL',
    description: 'Redis for jobs and applied state',
  }),
  redisPrefix: text({
    flag: 'redis-prefix',
    env: 'CONVERGE_REDIS_PREFIX',
    key: 'redis_prefix',
    placeholder: 'PREFIX',
    description: 'key prefix; keep the {hash tag} for Redis Cluster',
  }),
  redisCluster: onOff({
    flag: 'redis-cluster',
    env: 'CONVERGE_REDIS_CLUSTER',
    key: 'redis_cluster',
    description: 'redis_url is one node of a Redis Cluster (the prefix must start with a {hash tag})',
  }),
  namePrefix: optionalText({
    flag: 'name-prefix',
    env: 'CONVERGE_NAME_PREFIX',
    key: 'name_prefix',
    placeholder: 'PREFIX',
    description: 'manage only deployments whose names start with this: listing, planning and orphans',
  }),
  resync: duration(
    {
      flag: 'resync',
      env: 'CONVERGE_RESYNC',
      key: 'resync',
      placeholder: 'DURATION',
      description: 'daemon: full reconcile interval (at least 1s)',
    },
    1000,
  ),
  debounce: duration(
    {
      flag: 'debounce',
      env: 'CONVERGE_DEBOUNCE',
      key: 'debounce',
      placeholder: 'DURATION',
      description: 'daemon: quiet time after a file change before planning (at least 10ms)',
    },
    10,
  ),
  concurrency: wholeNumber(
    {
      flag: 'concurrency',
      env: 'CONVERGE_CONCURRENCY',
      key: 'concurrency',
      placeholder: 'N',
      description: 'jobs in flight per worker process (at least 1)',
    },
    1,
  ),
  httpPort: port({
    flag: 'http-port',
    env: 'CONVERGE_HTTP_PORT',
    key: 'http_port',
    placeholder: 'N',
    description: 'daemon: port of /healthz, /readyz, /metrics, /status (1 to 65535; 0: any free port)',
  }),
  httpHost: text({
    flag: 'http-host',
    env: 'CONVERGE_HTTP_HOST',
    key: 'http_host',
    placeholder: 'ADDR',
    description: 'daemon: address the status server binds to',
  }),
  logLevel: oneOf(LOG_LEVELS, {
    flag: 'log-level',
    env: 'CONVERGE_LOG_LEVEL',
    key: 'log_level',
    placeholder: 'LEVEL',
    description: 'log level',
  }),
  allowLocalDiscovery: onOff({
    flag: 'allow-local-discovery',
    env: 'CONVERGE_ALLOW_LOCAL_DISCOVERY',
    key: 'allow_local_discovery',
    description: 'let MCP discovery use http and reach loopback or private addresses',
  }),
  allowLiteralSecrets: onOff({
    flag: 'allow-literal-secrets',
    env: 'CONVERGE_ALLOW_LITERAL_SECRETS',
    key: 'allow_literal_secrets',
    description: 'accept literal secret values in manifests (local use only)',
  }),
  allowPartial: onOff({
    flag: 'allow-partial',
    env: 'CONVERGE_ALLOW_PARTIAL',
    key: 'allow_partial',
    description:
      'apply: write the resources of the files that load although another file fails to load (default: nothing is written); nothing is deleted either way',
  }),
  autoApprove: onOff({
    flag: 'auto-approve',
    env: 'CONVERGE_AUTO_APPROVE',
    key: 'auto_approve',
    description:
      'apply: write without asking "yes" on a terminal (apply asks only when stdin and stdout are terminals, the output is text and the plan was made now)',
  }),
  emulatorState: optionalText({
    flag: 'emulator-state',
    env: 'CONVERGE_EMULATOR_STATE',
    key: 'emulator_state',
    placeholder: 'FILE',
    description: 'with --api-url embedded: seed the in-process emulator from this state file',
  }),
  driftPolicy: oneOf(['heal', 'report'], {
    flag: 'drift',
    env: 'CONVERGE_DRIFT',
    key: 'drift',
    placeholder: 'POLICY',
    description: 'daemon: heal (revert drift) or report it only',
  }),
  requestTimeout: duration({
    flag: 'request-timeout',
    env: 'CONVERGE_REQUEST_TIMEOUT',
    key: 'request_timeout',
    placeholder: 'DURATION',
    description: 'timeout of one request to the service',
  }),
  attempts: wholeNumber(
    {
      flag: 'attempts',
      env: 'CONVERGE_ATTEMPTS',
      key: 'attempts',
      placeholder: 'N',
      description: 'attempts per job before it fails (at least 1)',
    },
    1,
  ),
  backoff: duration({
    flag: 'backoff',
    env: 'CONVERGE_BACKOFF',
    key: 'backoff',
    placeholder: 'DURATION',
    description: 'first retry delay of a job (doubles, with jitter)',
  }),
  maxBackoff: duration(
    {
      flag: 'max-backoff',
      env: 'CONVERGE_MAX_BACKOFF',
      key: 'max_backoff',
      placeholder: 'DURATION',
      description:
        'longest retry delay of a job, however many attempts failed (a Retry-After is still waited out); at most 5m',
    },
    1,
  ),
  globalRate: wholeNumber({
    flag: 'global-rate',
    env: 'CONVERGE_GLOBAL_RATE',
    key: 'global_rate',
    placeholder: 'N',
    description: 'writes per second across all worker processes (0: no limit)',
  }),
  waitTimeout: duration({
    flag: 'wait-timeout',
    env: 'CONVERGE_WAIT_TIMEOUT',
    key: 'wait_timeout',
    placeholder: 'DURATION',
    description: 'apply --wait: how long to wait for new revisions and rollouts already in progress',
  }),
  shutdownTimeout: duration({
    flag: 'shutdown-timeout',
    env: 'CONVERGE_SHUTDOWN_TIMEOUT',
    key: 'shutdown_timeout',
    placeholder: 'DURATION',
    description: 'daemon and worker: deadline for active jobs on SIGTERM',
  }),
  progressDeadline: duration(
    {
      flag: 'progress-deadline',
      env: 'CONVERGE_PROGRESS_DEADLINE',
      key: 'progress_deadline',
      placeholder: 'DURATION',
      description: 'a new revision not active after this long is degraded (ProgressDeadlineExceeded)',
    },
    1000,
  ),
  healthPoll: duration(
    {
      flag: 'health-poll',
      env: 'CONVERGE_HEALTH_POLL',
      key: 'health_poll',
      placeholder: 'DURATION',
      description: 'daemon and apply --wait: how often building revisions are read (at least 100ms)',
    },
    100,
  ),
  adopt: oneOf(['auto', 'explicit'], {
    flag: 'adopt',
    env: 'CONVERGE_ADOPT',
    key: 'adopt',
    placeholder: 'MODE',
    description:
      'auto: take over a live deployment of a declared name at once; explicit: only with the annotation converge/adopt: "true"',
  }),
  prune: onOff({
    flag: 'prune',
    env: 'CONVERGE_PRUNE',
    key: 'prune',
    description: 'delete deployments converge owns whose manifest is gone (apply, run; plan shows them)',
  }),
  maxDeletes: wholeNumber({
    flag: 'max-deletes',
    env: 'CONVERGE_MAX_DELETES',
    key: 'max_deletes',
    placeholder: 'N',
    description: 'prune: more deletes than this in one run and none is made',
  }),
  pruneGrace: duration(
    {
      flag: 'prune-grace',
      env: 'CONVERGE_PRUNE_GRACE',
      key: 'prune_grace',
      placeholder: 'DURATION',
      description:
        'daemon prune: how long an owned resource must stay undeclared, the manifests unchanged, before it is deleted (at least 100ms)',
    },
    100,
  ),
  pruneMode: oneOf(['auto', 'confirm'], {
    flag: 'prune-mode',
    env: 'CONVERGE_PRUNE_MODE',
    key: 'prune_mode',
    placeholder: 'MODE',
    description:
      'daemon prune: auto (delete once prune_grace has passed) or confirm (only after converge reconcile --confirm-delete NAME)',
  }),
  pruneTracingProjects: onOff({
    flag: 'prune-tracing-projects',
    env: 'CONVERGE_PRUNE_TRACING_PROJECTS',
    key: 'prune_tracing_projects',
    description: "prune: delete a deployment's tracing project with it",
  }),
  jobLock: duration({
    flag: 'job-lock',
    env: 'CONVERGE_JOB_LOCK',
    key: 'job_lock',
    placeholder: 'DURATION',
    description: 'daemon: lock time of a running job; jobs of a worker that died are retried after about this long',
  }),
  flapWindow: duration(
    {
      flag: 'flap-window',
      env: 'CONVERGE_FLAP_WINDOW',
      key: 'flap_window',
      placeholder: 'DURATION',
      description: 'flap guard: how far back writes are looked at for a conflict (at least 1s)',
    },
    1000,
  ),
  flapLimit: wholeNumber(
    {
      flag: 'flap-limit',
      env: 'CONVERGE_FLAP_LIMIT',
      key: 'flap_limit',
      placeholder: 'N',
      description:
        'flap guard: writes putting back a change made outside converge allowed per flap window before a conflict stops them (at least 1)',
    },
    1,
  ),
  lease: duration(
    {
      flag: 'lease',
      env: 'CONVERGE_LEASE',
      key: 'lease',
      placeholder: 'DURATION',
      description: 'daemon: leader lease time (at least 1s); a crashed leader is replaced within about this long',
    },
    1000,
  ),
  waveMaxInFlight: waveLimit({
    flag: 'wave-max-in-flight',
    env: 'CONVERGE_WAVE_MAX_IN_FLIGHT',
    key: 'wave_max_in_flight',
    placeholder: 'N|P%',
    description:
      'apply --wait and the daemon: at most this many writes of one rollout wave in flight at once, a count or a percentage of the wave (none: the whole wave; docs/rollouts.md)',
  }),
  vars: pathList({
    flag: 'vars',
    env: 'CONVERGE_VARS',
    key: 'vars',
    placeholder: 'FILE',
    description: 'variables file for ${NAME} in manifests; repeat for more, later files win (docs/environments.md)',
  }),
  overlays: pathList({
    flag: 'overlay',
    env: 'CONVERGE_OVERLAYS',
    key: 'overlays',
    placeholder: 'DIR',
    description:
      'overlay directory merged over the manifests; repeat for more, applied in order (docs/environments.md)',
  }),
  replicaId: optionalText({
    flag: 'replica-id',
    env: 'CONVERGE_REPLICA_ID',
    key: 'replica_id',
    placeholder: 'ID',
    description: "daemon: this replica's name in the lease, /status and metrics (default: hostname:pid)",
  }),
});

export type SettingName = keyof typeof SETTINGS.shape;

/** Every setting's name, in table order. */
export const SETTING_NAMES = SETTINGS.keyof().options;

/** The flag, environment variable and config-file key of one setting. */
export function settingSource(name: SettingName): SettingSource {
  const source = sourceOf(SETTINGS.shape[name]);
  if (!source) throw new Error(`setting ${name} has no registered source`);
  return source;
}
