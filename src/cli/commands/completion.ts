// `converge completion bash|zsh|fish`: prints the shell's completion script, built from the command table (src/cli/completion-script.ts).
import { UsageError } from '../../core/errors.js';
import type { Command } from '../command.js';
import { completionScript, SHELLS, type Shell } from '../completion-script.js';
import { COMMAND_SUMMARIES } from './summaries.js';

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
    summary: COMMAND_SUMMARIES.completion,
    usage: [
      `converge completion ${SHELLS.join('|')}`,
      'converge completion --targets -- DIR',
      'converge completion --recorded -- [WORD...]',
    ].join(' | '),
    details: [
      'Load it in the current shell, or save it where the shell finds completions:',
      '  bash:  source <(converge completion bash)     or save as ~/.local/share/bash-completion/completions/converge',
      '  zsh:   source <(converge completion zsh)      or save as _converge in a directory of $fpath',
      '  fish:  converge completion fish | source      or save as ~/.config/fish/completions/converge.fish',
      'The scripts ask "converge completion --targets -- DIR" for the names --target takes (DIR: the line\'s',
      'manifest directory), and "converge completion --recorded -- WORD..." for the names converge history takes:',
      'the resources the Redis prefix knows (WORD...: the words after history; --redis-url, --redis-prefix and',
      '--config are read from them).',
    ].join('\n'),
    positionals: [0, 1_000],
    options: {
      targets: {
        type: 'boolean',
        description:
          'print the names --target takes, one a line, read from the manifest directory DIR; nothing on any problem (the bash script asks it)',
      },
      recorded: {
        type: 'boolean',
        description: "print history's names, one a line (the resources the Redis prefix knows); nothing on any problem",
      },
    },
    async run(args, io) {
      if (args.values.recorded === true) {
        // Inside completion: never a message, never a failure; a Redis that cannot be read offers nothing. The Redis
        // client is loaded here only, so that printing a script loads none.
        const { recordedWords } = await import('../completion-recorded.js');
        const words = await recordedWords(args.positionals, io.env).catch(() => []);
        for (const word of words) io.stdout.write(`${word}\n`);
        return 0;
      }
      if (args.values.targets === true) {
        // Inside completion: never a message, never a failure; a line that names no readable directory offers nothing.
        const { targetWords } = await import('../completion-targets.js');
        const words =
          args.positionals.length === 1 ? await targetWords(args.positionals[0]!, io.cwd).catch(() => []) : [];
        for (const word of words) io.stdout.write(`${word}\n`);
        return 0;
      }
      if (args.positionals.length !== 1) throw new UsageError(`give one shell: ${SHELLS.join(', ')}`);
      const shell = args.positionals[0]!;
      if (!isShell(shell))
        throw new UsageError(`no completion for the shell "${shell}"; give one of ${SHELLS.join(', ')}`);
      io.stdout.write(completionScript(shell, await loadCommands()));
      return 0;
    },
  };
}
