// `converge notify test [NAME]`: one test event to each configured receiver (or the named one), and what each answered.
import { UsageError } from '../../core/errors.js';
import { readGitCommit } from '../../observe/manifest-version.js';
import { testEvent } from '../../notify/sender.js';
import type { Command } from '../command.js';
import { notificationSender } from '../../notify/wiring.js';
import { resolveSettings, settingOptions } from '../settings.js';
import { COMMAND_SUMMARIES } from './summaries.js';

const DETAILS = `Receivers are the config file's notifications: list (docs/notifications.md); their URLs and tokens come from the
environment variables it names. One attempt per receiver, no retry; exit 1 when any did not take it.
A commit-status receiver gets a "success" status with context converge/<receiver> on --commit, else on the git
HEAD of the current directory.`;

export const notifyCommand: Command = {
  name: 'notify',
  summary: COMMAND_SUMMARIES.notify,
  usage: 'converge notify test [NAME] [--config FILE] [--commit SHA]',
  details: DETAILS,
  positionals: [1, 2],
  options: {
    ...settingOptions(),
    commit: { type: 'string', placeholder: 'SHA', description: 'commit-status receivers: the commit to set the test status on (default: git HEAD of the current directory)' },
  },
  async run(args, io) {
    const [action, name] = args.positionals;
    if (action !== 'test') throw new UsageError(`unknown action "${action}"; usage: ${notifyCommand.usage}`);
    const settings = resolveSettings(args, io.env);
    if (settings.notifications.length === 0) throw new UsageError(`config file ${settings.configFile} has no notifications: list; see docs/notifications.md`);
    const chosen = name === undefined ? settings.notifications : settings.notifications.filter((r) => r.name === name);
    if (chosen.length === 0) throw new UsageError(`no receiver "${name}" in ${settings.configFile}; configured: ${settings.notifications.map((r) => r.name).join(', ')}`);
    const commit = (args.values.commit as string | undefined) ?? (await readGitCommit(io.cwd));
    if (commit !== undefined && !/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(commit)) throw new UsageError(`--commit "${commit}" is not a full commit id (40 hex digits)`);
    const wiring = notificationSender({ notifications: chosen }, io.env)!;
    let failures = 0;
    try {
      for (const receiver of chosen) {
        const event = testEvent(receiver.name, new Date(), commit ? { kind: 'git', id: commit } : null);
        const answer = await wiring.sender.deliver(receiver.name, event);
        const said =
          answer.outcome === 'delivered' ? `delivered (answered ${answer.status})`
          : answer.outcome === 'skipped' ? `not sent: ${answer.detail}${receiver.type === 'commit-status' && !commit ? ' (give --commit SHA or run it inside the git checkout)' : ''}`
          : `not delivered: ${answer.detail}`;
        if (answer.outcome !== 'delivered') failures += 1;
        io.stdout.write(`${receiver.name} (${receiver.type}): ${said}\n`);
      }
    } finally {
      await wiring.sender.close();
    }
    return failures === 0 ? 0 : 1;
  },
};
