// The values a command's flags take that both its spec (e.g. plan.ts, read by --help and completion) and what it runs
// (e.g. plan-run.ts, loaded only to run it) read: kept here so that neither imports the other.
import type { SecretsPatchMode } from '../../emulator/merge.js';
import type { EchoMode } from '../../emulator/view.js';

/** What apply --output takes. */
export const APPLY_FORMATS = ['text', 'json'] as const;

/** What history --output takes. */
export const HISTORY_FORMATS = ['text', 'json'] as const;

/** What plan --output takes. */
export const PLAN_FORMATS = ['text', 'markdown', 'json'] as const;

/** What reconcile --output takes. */
export const RECONCILE_FORMATS = ['text', 'json'] as const;

/** What repos --output takes. */
export const REPOS_FORMATS = ['table', 'json'] as const;

/** What status --output takes. */
export const STATUS_FORMATS = ['text', 'json'] as const;

/** What validate --output takes. */
export const VALIDATE_FORMATS = ['text', 'json'] as const;

/** How many entries logs prints without --limit. */
export const LOGS_DEFAULT_LIMIT = 100;

/** The most entries --limit of logs takes (and a page of --follow). */
export const LOGS_MAX_LIMIT = 1000;

/** How often logs --follow asks, without --poll-interval (ms). */
export const LOGS_DEFAULT_POLL_MS = 2_000;

/** The schema's file name beside exported manifests, which their modelines point at. */
export const EXPORT_SCHEMA_NAME = 'converge.schema.json';

/** The words of emulator --secrets, --secrets-patch and --echo (their checks and shell completion read them). */
export const EMULATOR_SECRETS_MODES = ['plain', 'masked', 'omitted'] as const;
export const EMULATOR_SECRETS_PATCH_MODES: readonly SecretsPatchMode[] = ['merge', 'replace'];
export const EMULATOR_ECHO_MODES: readonly EchoMode[] = ['exact', 'real'];
