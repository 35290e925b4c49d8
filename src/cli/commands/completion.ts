// `converge completion bash|zsh|fish`: prints the shell's completion script, built from the command table (src/cli/completion-script.ts).
import { UsageError } from '../../core/errors.js';
import type { Command } from '../command.js';
import { completionScript, SHELLS, type Shell } from '../completion-script.js';

function isShell(word: string): word is Shell {
  return (SHELLS as readonly string[]).includes(word);
}

/**
 * The completion command, given the loader of every command (the table in index.ts hands it in, so that this module
 * does not import the table that loads it).
 */
export function completionCommand(loadCommands: () => Promise<Command[]>): Command {
  return {
    name: 'completion',
    summary: 'print a shell completion script (commands, their flags, paths where an argument is one)',
    usage: `converge completion ${SHELLS.join('|')}`,
    details: [
      'Load it in the current shell, or save it where the shell finds completions:',
      '  bash:  source <(converge completion bash)     or save as ~/.local/share/bash-completion/completions/converge',
      '  zsh:   source <(converge completion zsh)      or save as _converge in a directory of $fpath',
      '  fish:  converge completion fish | source      or save as ~/.config/fish/completions/converge.fish',
    ].join('\n'),
    positionals: [1, 1],
    options: {},
    async run(args, io) {
      const shell = args.positionals[0]!;
      if (!isShell(shell)) throw new UsageError(`no completion for the shell "${shell}"; give one of ${SHELLS.join(', ')}`);
      io.stdout.write(completionScript(shell, await loadCommands()));
      return 0;
    },
  };
}
