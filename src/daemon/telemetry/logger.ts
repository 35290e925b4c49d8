// The daemon's pino logger: JSON lines by default, pretty on a TTY, with the API key and secret values redacted.
import { createRequire } from 'node:module';
import { pino, type Logger } from 'pino';
import type PinoPretty from 'pino-pretty';
import { maskValues, MIN_MASKED_LENGTH } from '../../core/mask.js';

export type { Logger };

export const REDACTED = '[Redacted]';

/**
 * pino `redact` paths (fast-redact syntax) for every secret-bearing place converge knows of: the API key (in
 * settings and in request headers), secret values of deployments (`secrets[*].value`, at the top or one or two
 * levels down, e.g. a request body), a provider's client_secret, and any `value` field.
 */
export const REDACT_PATHS: string[] = [
  'apiKey',
  '*.apiKey',
  'api_key',
  '*.api_key',
  'headers["x-api-key"]',
  '*.headers["x-api-key"]',
  '*.*.headers["x-api-key"]',
  'headers.authorization',
  '*.headers.authorization',
  'authorization',
  '*.authorization',
  'password',
  '*.password',
  'token',
  '*.token',
  'secrets[*].value',
  '*.secrets[*].value',
  '*.*.secrets[*].value',
  'client_secret',
  '*.client_secret',
  '*.*.client_secret',
  'value',
  '*.value',
];

/** Keys whose values are replaced at any depth (the redact paths above only reach a fixed depth). */
const SENSITIVE_KEY =
  /^(api[-_]?key|x-api-key|client[-_]?secret|password|passwd|authorization|token|secret[-_]?value)$/i;

const MAX_DEPTH = 10;

/**
 * A copy of `value` with sensitive keys censored at any depth, and every `value` inside a `secrets` array.
 * Returns the same object when nothing needed censoring. Errors are left to pino's error serializer.
 */
export function scrub(value: unknown, depth = 0, inSecrets = false): unknown {
  if (value === null || typeof value !== 'object' || value instanceof Error || depth > MAX_DEPTH) return value;
  if (Array.isArray(value)) {
    let changed = false;
    const out = value.map((item) => {
      const next = scrub(item, depth + 1, inSecrets);
      if (next !== item) changed = true;
      return next;
    });
    return changed ? out : value;
  }
  let out: Record<string, unknown> | undefined;
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
    let next: unknown;
    if (SENSITIVE_KEY.test(key) || (inSecrets && key === 'value')) next = item === undefined ? item : REDACTED;
    else next = scrub(item, depth + 1, key === 'secrets');
    if (next !== item) {
      out ??= { ...(value as Record<string, unknown>) };
      out[key] = next;
    }
  }
  return out ?? value;
}

/**
 * A function that masks each literal (and its JSON-escaped form) in a finished log line where it stands as a value
 * (src/core/mask.ts: a whole word, or anywhere when 8 characters or more); literals too short to mask are skipped.
 */
export function literalCensor(literals: readonly string[]): ((line: string) => string) | undefined {
  const forms = new Set<string>();
  for (const literal of literals) {
    if (!literal || literal.length < MIN_MASKED_LENGTH) continue;
    forms.add(literal);
    forms.add(JSON.stringify(literal).slice(1, -1));
  }
  if (forms.size === 0) return undefined;
  const values = [...forms];
  return (line) => maskValues(line, values, REDACTED);
}

export interface LoggerOptions {
  level: string;
  /** Where lines go; default process.stdout. */
  destination?: NodeJS.WritableStream & { isTTY?: boolean };
  /** Pretty output; default: when the destination is a TTY. */
  pretty?: boolean;
  /** Literal strings that must never appear in a line (the API key): replaced in the finished line. */
  sensitive?: readonly string[];
  /** Fields on every line. */
  base?: Record<string, unknown>;
  env?: NodeJS.ProcessEnv;
}

/** The logger. Secrets are kept out three ways: redact paths, a deep key scrub, and a literal censor. */
export function createLogger(options: LoggerOptions): Logger {
  const destination = options.destination ?? process.stdout;
  const env = options.env ?? process.env;
  const isPretty = options.pretty ?? Boolean(destination.isTTY);
  const censor = literalCensor(options.sensitive ?? []);
  const config: pino.LoggerOptions = {
    level: options.level,
    base: { name: 'converge', ...(options.base ?? {}) },
    redact: { paths: REDACT_PATHS, censor: REDACTED },
    formatters: {
      log: (object) => scrub(object) as Record<string, unknown>,
    },
    timestamp: pino.stdTimeFunctions.isoTime,
    ...(censor ? { hooks: { streamWrite: censor } } : {}),
  };
  if (isPretty) {
    // Loaded only for a terminal (31 modules, about 70 ms of CPU at every start otherwise): JSON lines need none of it.
    const pretty = createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;
    const stream = pretty({
      destination,
      colorize: Boolean(destination.isTTY) && !env.NO_COLOR,
      sync: true,
      ignore: 'pid,hostname,name',
      translateTime: 'SYS:HH:MM:ss.l',
    });
    return pino(config, stream);
  }
  if (destination === process.stdout) return pino(config, pino.destination({ dest: 1, sync: true }));
  return pino(config, destination);
}
