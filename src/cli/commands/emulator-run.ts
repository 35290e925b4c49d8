// What `converge emulator` runs (its flags and --help are in emulator.ts, loaded without this): the flags read, the server served until a signal.
import { UsageError } from '../../core/errors.js';
import { emulatorDiscoveryHook } from '../../emulator/discovery-hook.js';
import {
  startEmulator,
  type EchoMode,
  type EmulatorOptions,
  type SecretsMode,
  type SecretsPatchMode,
} from '../../emulator/server.js';
import { DEFAULT_BUILD_MS } from '../../emulator/defaults.js';
import type { CommandIo, ParsedArgs } from '../command.js';
import { resolveSettings } from '../settings.js';
import { EMULATOR_ECHO_MODES, EMULATOR_SECRETS_MODES, EMULATOR_SECRETS_PATCH_MODES } from './values.js';

function text(values: ParsedArgs['values'], name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

function wholeNumber(values: ParsedArgs['values'], name: string, min = 0): number | undefined {
  const raw = text(values, name);
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) < min)
    throw new UsageError(`--${name}: "${raw}" is not a whole number >= ${min}`);
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
  if (!(allowed as readonly string[]).includes(raw))
    throw new UsageError(`--${name}: "${raw}" is not one of ${allowed.join(', ')}`);
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
  if (!(EMULATOR_SECRETS_MODES as readonly string[]).includes(secrets))
    throw new UsageError(`--secrets: "${secrets}" is not one of ${EMULATOR_SECRETS_MODES.join(', ')}`);
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
    secretsPatch: oneOf<SecretsPatchMode>(values, 'secrets-patch', EMULATOR_SECRETS_PATCH_MODES, 'merge'),
    echo: oneOf<EchoMode>(values, 'echo', EMULATOR_ECHO_MODES, 'exact'),
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
async function serveEmulator(
  options: EmulatorOptions,
  io: CommandIo,
  stop: Promise<unknown>,
  logRequests: boolean,
): Promise<number> {
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

/** Runs `converge emulator`: serves until SIGTERM or SIGINT; returns the exit code. */
export async function runEmulatorCommand(args: ParsedArgs, io: CommandIo): Promise<number> {
  const { stop, release } = signals();
  try {
    // --allow-local-discovery is a shared setting: flag, CONVERGE_ALLOW_LOCAL_DISCOVERY, or the config file.
    const settings = await resolveSettings(args, io.env);
    const values = { ...args.values, 'allow-local-discovery': settings.allowLocalDiscovery };
    const options = emulatorOptionsFromArgs(values, io.env);
    return await serveEmulator(options, io, stop, args.values['log-requests'] === true);
  } finally {
    release();
  }
}
