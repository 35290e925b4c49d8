// `converge emulator`: serves the local emulator of the service until SIGTERM or SIGINT.
import { UsageError } from '../../core/errors.js';
import { emulatorDiscoveryHook } from '../../emulator/discovery-hook.js';
import {
  DEFAULT_BUILD_MS,
  startEmulator,
  type EchoMode,
  type EmulatorOptions,
  type SecretsMode,
  type SecretsPatchMode,
} from '../../emulator/server.js';
import type { Command, CommandIo, ParsedArgs } from '../command.js';
import { resolveSettings, settingOptions } from '../settings.js';
import { COMMAND_SUMMARIES } from './summaries.js';

/** The words of --secrets, --secrets-patch and --echo (their checks and shell completion read them). */
const SECRETS_MODES = ['plain', 'masked', 'omitted'] as const;
const SECRETS_PATCH_MODES: readonly SecretsPatchMode[] = ['merge', 'replace'];
const ECHO_MODES: readonly EchoMode[] = ['exact', 'real'];

function text(values: ParsedArgs['values'], name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

function wholeNumber(values: ParsedArgs['values'], name: string, min = 0): number | undefined {
  const raw = text(values, name);
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) < min) throw new UsageError(`--${name}: "${raw}" is not a whole number >= ${min}`);
  return Number(raw);
}

function rate(values: ParsedArgs['values'], name: string): number | undefined {
  const raw = text(values, name);
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(value) || value < 0 || value > 1) {
    throw new UsageError(`--${name}: "${raw}" is not a rate between 0 and 1 (e.g. 0.2)`);
  }
  return value;
}

function oneOf<T extends string>(values: ParsedArgs['values'], name: string, allowed: readonly T[], fallback: T): T {
  const raw = text(values, name) ?? fallback;
  if (!(allowed as readonly string[]).includes(raw)) throw new UsageError(`--${name}: "${raw}" is not one of ${allowed.join(', ')}`);
  return raw as T;
}

function regex(values: ParsedArgs['values'], name: string): RegExp | undefined {
  const raw = text(values, name);
  if (raw === undefined) return undefined;
  try {
    return new RegExp(raw);
  } catch (error) {
    throw new UsageError(`--${name}: "${raw}" is not a regular expression (${(error as Error).message})`);
  }
}

/** The emulator's options from the command's flags (and CONVERGE_EMULATOR_API_KEY); throws UsageError on bad input. */
export function emulatorOptionsFromArgs(values: ParsedArgs['values'], env: NodeJS.ProcessEnv): EmulatorOptions {
  const secrets = text(values, 'secrets') ?? 'masked';
  if (!(SECRETS_MODES as readonly string[]).includes(secrets)) throw new UsageError(`--secrets: "${secrets}" is not one of ${SECRETS_MODES.join(', ')}`);
  const port = wholeNumber(values, 'port');
  if (port !== undefined && port > 65535) throw new UsageError(`--port: ${port} is not a port number (0-65535)`);
  const apiKey = text(values, 'api-key') ?? (env.CONVERGE_EMULATOR_API_KEY || undefined);
  const allowLocal = values['allow-local-discovery'] === true;
  return {
    host: text(values, 'host') ?? '127.0.0.1',
    port: port ?? 0,
    stateFile: text(values, 'state'),
    seedFile: text(values, 'seed'),
    latencyMs: wholeNumber(values, 'latency-ms'),
    jitterMs: wholeNumber(values, 'jitter-ms'),
    failRate: rate(values, 'fail-rate'),
    rateLimitRate: rate(values, 'rate-limit-rate'),
    resetRate: rate(values, 'reset-rate'),
    lostResponseRate: rate(values, 'lost-response-rate'),
    retryAfterSeconds: wholeNumber(values, 'retry-after'),
    failDeletesMs: wholeNumber(values, 'fail-deletes-ms'),
    pageCap: wholeNumber(values, 'page-cap', 1),
    secrets: secrets as SecretsMode,
    apiKey,
    buildMs: wholeNumber(values, 'build-ms') ?? DEFAULT_BUILD_MS,
    buildFail: regex(values, 'build-fail'),
    deployFail: regex(values, 'deploy-fail'),
    secretsPatch: oneOf<SecretsPatchMode>(values, 'secrets-patch', SECRETS_PATCH_MODES, 'merge'),
    echo: oneOf<EchoMode>(values, 'echo', ECHO_MODES, 'exact'),
    specOnly: values['spec-only'] === true,
    omitTenantId: values['omit-tenant-id'] === true,
    lenientCreate: values['lenient-create'] === true,
    anyTarballPath: values['any-tarball-path'] === true,
    orgScopedKey: values['org-scoped-key'] === true,
    buildLogSecrets: values['build-log-secrets'] === true,
    maxBodyBytes: wholeNumber(values, 'max-body', 1),
    allowLocalDiscovery: allowLocal,
    discover: emulatorDiscoveryHook({ allowLocal }),
  };
}

/** Serves until `stop` settles, then closes cleanly. Returns the exit code. */
async function serveEmulator(options: EmulatorOptions, io: CommandIo, stop: Promise<unknown>, logRequests: boolean): Promise<number> {
  const emulator = await startEmulator({
    ...options,
    // The CLI prints requests instead of keeping them in memory for the life of the process.
    requestLogLimit: 0,
    onRequest: logRequests ? (entry) => io.stdout.write(`${JSON.stringify(entry)}\n`) : undefined,
    onError: (error) => io.stderr.write(`emulator: ${(error as Error)?.message ?? String(error)}\n`),
  });
  io.stderr.write(`emulator listening on ${emulator.url}\n`);
  await stop;
  await emulator.close();
  return 0;
}

/** A promise that settles on the first SIGTERM or SIGINT, and a function removing the handlers. */
function signals(): { stop: Promise<string>; release: () => void } {
  let release = (): void => undefined;
  const stop = new Promise<string>((resolve) => {
    const onSignal = (signal: string): void => {
      release();
      resolve(signal);
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
    release = () => {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
    };
  });
  return { stop, release };
}

export const emulatorCommand: Command = {
  name: 'emulator',
  summary: COMMAND_SUMMARIES.emulator,
  usage: 'converge emulator [--port N] [--host ADDR] [--state FILE] [--seed FILE] [fault and behaviour options]',
  positionals: [0, 0],
  options: {
    port: { type: 'string', placeholder: 'N', description: 'port to listen on (default 0: a free port, printed on start)' },
    host: { type: 'string', placeholder: 'ADDR', description: 'address to bind (default 127.0.0.1)' },
    state: { type: 'string', placeholder: 'FILE', description: 'seed from FILE (YAML, or JSON for .json) and persist every change to it atomically' },
    seed: { type: 'string', placeholder: 'FILE', description: 'seed from FILE when --state is absent or does not exist yet; never written' },
    'latency-ms': { type: 'string', placeholder: 'N', description: 'added delay per request, in milliseconds' },
    'jitter-ms': { type: 'string', placeholder: 'N', description: 'up to this many more milliseconds of random delay' },
    'fail-rate': { type: 'string', placeholder: 'R', description: 'share of requests answered 503 (0..1)' },
    'rate-limit-rate': { type: 'string', placeholder: 'R', description: 'share of requests answered 429 with Retry-After (0..1)' },
    'reset-rate': { type: 'string', placeholder: 'R', description: 'share of connections dropped before the request is handled (0..1)' },
    'lost-response-rate': { type: 'string', placeholder: 'R', description: 'share of requests handled whose answer is then lost (0..1)' },
    'retry-after': { type: 'string', placeholder: 'N', description: 'Retry-After seconds of the 429s (default 1)' },
    'fail-deletes-ms': { type: 'string', placeholder: 'N', description: 'answer every DELETE 503 for the first N milliseconds (an outage of deletes only; nothing is deleted)' },
    'page-cap': { type: 'string', placeholder: 'N', description: 'serve at most N deployments per page whatever the limit' },
    secrets: { type: 'string', placeholder: 'MODE', choices: SECRETS_MODES, description: 'echo secret values plain, masked (default) or omitted' },
    'api-key': { type: 'string', placeholder: 'KEY', description: 'require this X-Api-Key (env CONVERGE_EMULATOR_API_KEY)' },
    'build-ms': {
      type: 'string',
      placeholder: 'N',
      description: `milliseconds a new revision takes (QUEUED, BUILDING, DEPLOYING, then DEPLOYED and active) and a deleted deployment stays AWAITING_DELETE (default ${DEFAULT_BUILD_MS})`,
    },
    'build-fail': { type: 'string', placeholder: 'REGEX', description: 'new revisions of deployments whose name matches end in BUILD_FAILED; the active revision stays on the last good one' },
    'deploy-fail': { type: 'string', placeholder: 'REGEX', description: 'new revisions of deployments whose name matches end in DEPLOY_FAILED' },
    'secrets-patch': { type: 'string', placeholder: 'MODE', choices: SECRETS_PATCH_MODES, description: 'a non-empty secrets list in a PATCH is merged by name into the stored set (merge, default) or replaces it (replace)' },
    echo: {
      type: 'string',
      placeholder: 'MODE',
      choices: ECHO_MODES,
      description: 'exact (default): fields come back as sent; real: as the real service answers (listener_config, install_command, build_command null; its own custom_url for codehost; display_name and is_preview added)',
    },
    'spec-only': { type: 'boolean', description: 'serve only the spec\'s endpoints: GET and DELETE of one deployment, revisions and provider list/get/PATCH/DELETE answer 404 or 405' },
    'omit-tenant-id': { type: 'boolean', description: 'leave tenant_id out of responses, as older services do' },
    'lenient-create': { type: 'boolean', description: 'accept incomplete create bodies (source_config, source_revision_config, secrets left out; graph_config_path neither required nor refused)' },
    'any-tarball-path': { type: 'boolean', description: 'take any source_tarball_path in a create or PATCH, as older emulators did (default: only an object_path it handed out by POST /v2/deployments/{id}/upload-url, as the real service)' },
    'max-body': { type: 'string', placeholder: 'BYTES', description: 'request bodies larger than this answer 413 Request body too large (default 1048576)' },
    'org-scoped-key': { type: 'boolean', description: 'the API key spans several workspaces: a request without X-Tenant-Id answers 403 asking for a workspace' },
    'build-log-secrets': { type: 'boolean', description: 'build logs print the deployment\'s environment (NAME=value), as a build that dumps it does (to test masking)' },
    ...settingOptions('allowLocalDiscovery'),
    'log-requests': { type: 'boolean', description: 'print one JSON line per request on stdout (secret values redacted)' },
  },
  async run(args: ParsedArgs, io: CommandIo): Promise<number> {
    const { stop, release } = signals();
    try {
      // --allow-local-discovery is a shared setting: flag, CONVERGE_ALLOW_LOCAL_DISCOVERY, or the config file.
      const settings = resolveSettings(args, io.env);
      const values = { ...args.values, 'allow-local-discovery': settings.allowLocalDiscovery };
      const options = emulatorOptionsFromArgs(values, io.env);
      return await serveEmulator(options, io, stop, args.values['log-requests'] === true);
    } finally {
      release();
    }
  },
};
