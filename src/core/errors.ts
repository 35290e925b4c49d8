// Runtime failures: small Error subclasses with a stable `code` and an optional `cause` (design.md §6).

/** Base of every error converge throws on purpose. Messages never hold secret values or the API key. */
export class ConvergeError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** A user-facing setting or argument is wrong (bad flag, bad duration, missing directory). */
export class UsageError extends ConvergeError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('E_USAGE', message, options);
  }
}

/** A secret reference could not be resolved (missing environment variable, unreadable file). */
export class SecretResolutionError extends ConvergeError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('E_SECRET', message, options);
  }
}
