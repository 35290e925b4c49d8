// Runtime failures: small Error subclasses with a stable `code` and an optional `cause` (docs/contracts.md §4).

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

/** The service answered with a non-2xx status. `detail` is the service's own text (never a request body). */
export class ServiceError extends ConvergeError {
  readonly status: number;
  readonly detail: string;
  /** From Retry-After on 429 and 5xx answers, when the service sent one. */
  readonly retryAfterMs?: number;
  readonly method: string;
  /** Templated route, e.g. /v2/deployments/{deployment_id}. */
  readonly route: string;

  constructor(init: { status: number; detail: string; method: string; route: string; retryAfterMs?: number }) {
    super(`E_SERVICE_${init.status}`, `${init.method} ${init.route} answered ${init.status}: ${init.detail}`);
    this.status = init.status;
    this.detail = init.detail;
    this.method = init.method;
    this.route = init.route;
    if (init.retryAfterMs !== undefined) this.retryAfterMs = init.retryAfterMs;
  }
}

/**
 * The service refused a sent write in a way no retry changes (a create answered 409 while the name is held by
 * something converge cannot see): trying again cannot help until someone acts on the reason. Never a decision: a
 * write step that finds live state no longer fits its decided write returns that as a value (src/core/write-premise.ts).
 */
export class BlockedError extends ConvergeError {
  readonly reason: string;
  /** A create answered 409 whose name no listed deployment has (src/core/holds.ts nameTakenReason). */
  readonly nameTaken: boolean;

  constructor(reason: string, options: { nameTaken?: boolean } = {}) {
    super('E_BLOCKED', `blocked: ${reason}`);
    this.reason = reason;
    this.nameTaken = options.nameTaken === true;
  }
}

/** A job asks for something this process cannot give it (a literal secret value it never read). Trying again cannot help. */
export class JobInputError extends ConvergeError {
  constructor(message: string) {
    super('E_JOB_INPUT', message);
  }
}
