// `converge notify test [NAME]`: one test event to each configured receiver (or the named one), and what each answered.
import type { Command } from '../command.js';
import { settingOptions } from '../settings.js';
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
    commit: {
      type: 'string',
      placeholder: 'SHA',
      description:
        'commit-status receivers: the commit to set the test status on (default: git HEAD of the current directory)',
    },
  },
  run: async (args, io) => (await import('./notify-run.js')).runNotifyCommand(args, io, notifyCommand.usage),
};
