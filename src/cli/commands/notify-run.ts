// What `converge notify test [NAME]` runs (its flags and --help are in notify.ts, loaded without this).
import { UsageError } from '../../core/errors.js';
import { readGitCommit } from '../../observe/manifest-version.js';
import { testEvent } from '../../notify/sender.js';
import { notificationSender } from '../../notify/wiring.js';
import { resolveSettings } from '../settings.js';
import type { CommandIo, ParsedArgs } from '../command.js';

/** Runs `converge notify test [NAME]`; returns the exit code. */
export async function runNotifyCommand(args: ParsedArgs, io: CommandIo, usage: string): Promise<number> {
  const [action, name] = args.positionals;
  if (action !== 'test') throw new UsageError(`unknown action "${action}"; usage: ${usage}`);
  const settings = await resolveSettings(args, io.env);
  if (settings.notifications.length === 0)
    throw new UsageError(`config file ${settings.configFile} has no notifications: list; see docs/notifications.md`);
  const chosen = name === undefined ? settings.notifications : settings.notifications.filter((r) => r.name === name);
  if (chosen.length === 0)
    throw new UsageError(
      `no receiver "${name}" in ${settings.configFile}; configured: ${settings.notifications.map((r) => r.name).join(', ')}`,
    );
  const commit = (args.values.commit as string | undefined) ?? (await readGitCommit(io.cwd));
  if (commit !== undefined && !/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(commit))
    throw new UsageError(`--commit "${commit}" is not a full commit id (40 hex digits)`);
  const wiring = notificationSender({ notifications: chosen }, io.env)!;
  let failures = 0;
  try {
    for (const receiver of chosen) {
      const event = testEvent(receiver.name, new Date(), commit ? { kind: 'git', id: commit } : null);
      const answer = await wiring.sender.deliver(receiver.name, event);
      const said =
        answer.outcome === 'delivered'
          ? `delivered (answered ${answer.status})`
          : answer.outcome === 'skipped'
            ? `not sent: ${answer.detail}${receiver.type === 'commit-status' && !commit ? ' (give --commit SHA or run it inside the git checkout)' : ''}`
            : `not delivered: ${answer.detail}`;
      if (answer.outcome !== 'delivered') failures += 1;
      io.stdout.write(`${receiver.name} (${receiver.type}): ${said}\n`);
    }
  } finally {
    await wiring.sender.close();
  }
  return failures === 0 ? 0 : 1;
}
