// `converge history [KIND/]NAME`: one resource's recorded events, newest first, read from Redis only (the event log, src/store/event-log.ts).
import { HISTORY_FORMATS } from './values.js';
import { HISTORY_MAX_ENTRIES } from '../../store/event-log.js';
import { type Command } from '../command.js';
import { settingOptions } from '../settings.js';
import { COMMAND_SUMMARIES } from './summaries.js';
const DETAILS = `Reads the Redis prefix the daemon and apply write to (--redis-url, --redis-prefix); no service is asked.
NAME alone means a Deployment unless only another kind of that name has a history. Each event: when, its type
(decided, write_enqueued, write_done, write_failed, revision, held, released, conflict, drift_detected, drift_healed,
pruned), its reason and message, the manifests' version, the job, the revision and which process recorded it.
--since takes an ISO time or a duration back from now (1h, 30m, 7d). A resource keeps its last ${HISTORY_MAX_ENTRIES} events
for at most 30 days (docs/daemon.md, "The event log").`;

export const historyCommand: Command = {
  name: 'history',
  summary: COMMAND_SUMMARIES.history,
  usage: 'converge history [KIND/]NAME [--output text|json] [--limit N] [--since TIME|DURATION]',
  details: DETAILS,
  positionals: [1, 1],
  options: {
    ...settingOptions('redisUrl', 'redisPrefix'),
    output: {
      type: 'string',
      short: 'o',
      placeholder: 'FMT',
      choices: HISTORY_FORMATS,
      description: 'text (default) or json: { "resource", "events": [...] }',
    },
    limit: {
      type: 'string',
      placeholder: 'N',
      description: `at most N events (default and most: ${HISTORY_MAX_ENTRIES})`,
    },
    since: {
      type: 'string',
      placeholder: 'TIME',
      description: 'only events at or after an ISO time, or this long ago (1h, 7d)',
    },
  },
  run: async (args, io) => (await import('./history-run.js')).runHistoryCommand(args, io),
};
