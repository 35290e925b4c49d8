// What `converge history [KIND/]NAME` runs (its flags and --help are in history.ts, loaded without this).
import { HISTORY_FORMATS } from './values.js';
import { UsageError } from '../../core/errors.js';
import { DEPLOYMENT_NAME_MAX, DEPLOYMENT_NAME_PATTERN, validNameLike } from '../../core/wire/schema.js';
import { parseDuration } from '../../core/duration.js';
import { KIND_NAMES } from '../../core/kinds/index.js';
import { versionLabel } from '../../core/manifest-version.js';
import { historyDocument, type RecordedEvent } from '../../core/resource-record.js';
import { fenceKey } from '../../leader/lease.js';
import { EventLogStore, HISTORY_MAX_ENTRIES } from '../../store/event-log.js';
import { ReconcileRecordStore } from '../../store/reconcile-record.js';
import { closeRedis, connectProducer } from '../../store/redis.js';
import { nearestName } from '../command.js';
import { resolveSettings } from '../settings.js';
import type { CommandIo, ParsedArgs } from '../command.js';

/** `Kind/name` from `[KIND/]NAME`: a kind named must be one converge knows, and the name one a manifest can have. */
function resourceKey(text: string): { key: string } | { name: string } {
  const slash = text.indexOf('/');
  if (slash < 0) return { name: checkedName(text, text) };
  const kind = text.slice(0, slash);
  const name = text.slice(slash + 1);
  const known = KIND_NAMES.find((k) => k.toLowerCase() === kind.toLowerCase());
  if (!known || !name)
    throw new UsageError(
      `"${text}" is not KIND/NAME with a kind converge knows (${KIND_NAMES.join(', ')}); give NAME or e.g. Deployment/${name || 'web'}`,
    );
  return { key: `${known}/${checkedName(name, text)}` };
}

/** A name under the manifests' naming rule (metadata.name), or a UsageError that gives the rule. */
function checkedName(name: string, text: string): string {
  if (DEPLOYMENT_NAME_PATTERN.test(name) && name.length <= DEPLOYMENT_NAME_MAX) return name;
  const like = validNameLike(name);
  const hint = like ? `; did you mean "${like}"?` : '';
  throw new UsageError(
    `"${text}" is not a resource name: a metadata.name is lowercase letters, digits and dashes, starting with a letter, at most ${DEPLOYMENT_NAME_MAX} characters${hint}`,
  );
}

/** One line for a resource Redis knows nothing of: no state and no event, with the nearest known name. */
function unknownResource(key: string, known: readonly string[], prefix: string): string {
  const guess =
    nearestName(key, known) ??
    nearestName(
      key.slice(key.indexOf('/') + 1),
      known.map((k) => k.slice(k.indexOf('/') + 1)),
    );
  const hint = guess ? `; did you mean "${guess}"?` : '; converge status lists the resources the daemon knows';
  return `no resource ${key} is known on prefix ${prefix} (no state and no recorded event: no manifest declared it here, or it was never reconciled with this --redis-prefix)${hint}`;
}

function sinceOf(text: string | undefined, now: number): string | undefined {
  if (text === undefined) return undefined;
  if (/^\d{4}-\d{2}-\d{2}/.test(text)) {
    const at = Date.parse(text);
    if (Number.isNaN(at))
      throw new UsageError(
        `--since "${text}" is not a time; give an ISO time (2026-01-31T12:00:00Z) or a duration (1h, 7d)`,
      );
    return new Date(at).toISOString();
  }
  try {
    return new Date(now - parseDuration(text, '--since')).toISOString();
  } catch {
    throw new UsageError(
      `--since "${text}" is neither an ISO time nor a duration; give e.g. 2026-01-31T12:00:00Z or 1h, 7d`,
    );
  }
}

/** "revision r2 BUILD_FAILED (created 2026-…)": the revision, its status and when the service says it was created. */
function revisionText(revision: NonNullable<RecordedEvent['revision']>): string {
  return `revision ${revision.id} ${revision.status}${revision.createdAt ? ` (created ${revision.createdAt})` : ''}`;
}

function textEvent(event: RecordedEvent): string {
  const parts = [event.at, event.type.padEnd(14), event.reason.padEnd(20), event.message];
  const refs = [
    event.job ? `job ${event.job.id}` : '',
    event.revision ? revisionText(event.revision) : '',
    event.manifests ? `manifests ${versionLabel(event.manifests)}` : '',
    `by ${event.by}`,
  ].filter(Boolean);
  return `${parts.join('  ')}\n    ${refs.join(', ')}\n`;
}

/** Runs `converge history [KIND/]NAME`; returns the exit code. */
export async function runHistoryCommand(args: ParsedArgs, io: CommandIo): Promise<number> {
  const output = (args.values.output as string | undefined) ?? 'text';
  if (!HISTORY_FORMATS.includes(output as (typeof HISTORY_FORMATS)[number]))
    throw new UsageError(`--output "${output}" is not one of ${HISTORY_FORMATS.join(', ')}`);
  const limitText = args.values.limit as string | undefined;
  const limit = limitText === undefined ? HISTORY_MAX_ENTRIES : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1)
    throw new UsageError(`--limit "${limitText}" is not a whole number of events; give e.g. --limit 20`);
  const since = sinceOf(args.values.since as string | undefined, Date.now());
  const named = resourceKey(args.positionals[0]!);
  const settings = await resolveSettings(args, io.env);
  const redis = await connectProducer(settings);
  try {
    const store = new EventLogStore(redis, settings.redisPrefix);
    const knownKeys = await store.keysWithState();
    const known = new Set(knownKeys);
    let key: string;
    if ('key' in named) key = named.key;
    else {
      const other = KIND_NAMES.map((kind) => `${kind}/${named.name}`).find(
        (k) => known.has(k) && !k.startsWith('Deployment/'),
      );
      key = known.has(`Deployment/${named.name}`) || !other ? `Deployment/${named.name}` : other;
    }
    const events = await store.history(key, { limit: Math.min(limit, HISTORY_MAX_ENTRIES), since });
    let orphan = false;
    if (
      events.length === 0 &&
      !known.has(key) &&
      (since === undefined || (await store.history(key, { limit: 1 })).length === 0)
    ) {
      // The service has it and no manifest declares it (an orphan the leader recorded): known, with nothing recorded.
      const orphans =
        (await new ReconcileRecordStore(redis, settings.redisPrefix, fenceKey(settings.redisPrefix)).read())?.record
          .orphans ?? [];
      orphan = orphans.includes(key);
      if (!orphan) throw new UsageError(unknownResource(key, [...knownKeys, ...orphans], settings.redisPrefix));
    }
    if (output === 'json') {
      io.stdout.write(`${JSON.stringify(historyDocument(key, events), null, 2)}\n`);
      return 0;
    }
    if (events.length === 0) {
      const why = orphan
        ? ': the service has it and no manifest declares it (an orphan: converge writes nothing to it)'
        : '';
      io.stdout.write(
        `${key}: no events recorded${since ? ` since ${since}` : ''} on prefix ${settings.redisPrefix}${why}\n`,
      );
      return 0;
    }
    io.stdout.write(`${key}: ${events.length} event${events.length === 1 ? '' : 's'}, newest first\n`);
    for (const event of events) io.stdout.write(textEvent(event));
    return 0;
  } finally {
    await closeRedis(redis);
  }
}
