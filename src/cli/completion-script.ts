// Shell completion scripts (bash, zsh, fish) rendered from the CLI's own command table: every command, its flags, and paths where a value or argument is one.
import type { Command, OptionSpec } from './command.js';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

/**
 * What a flag's value or a positional argument completes to: a directory, a file, fixed words (an enum), the names of
 * the line's manifest directory (--target: `converge completion --targets`, in each shell), the resources the line's
 * Redis prefix knows (history's [KIND/]NAME: `converge completion --recorded`), or nothing offered.
 */
type Completes = { paths: 'dir' | 'file' } | { words: string[] } | { resources: true } | { recorded: true } | undefined;

/** One flag as the scripts offer it. */
interface FlagView {
  long: string;
  short?: string;
  description: string;
  /** Takes a value (a string option); `completes` says what the value completes to. */
  takesValue: boolean;
  completes: Completes;
}

/** One command as the scripts offer it: its flags (with --help) and what its first argument completes to. */
interface CommandView {
  name: string;
  summary: string;
  flags: FlagView[];
  argument: Completes;
  /** The argument repeats (`FILE...` in the usage): zsh completes every one, not the first only. */
  repeats: boolean;
}

/**
 * A placeholder that names a path: its value completes to directories (DIR) or files (FILE, `FILE...`); a directory or
 * files (`DIR|FILE...`, validate's argument) completes to files, which every shell offers with the directories.
 */
function pathsOf(placeholder: string | undefined): Completes {
  const names = (placeholder ?? '').replace(/\.\.\.$/, '').split('|');
  if (names.includes('FILE')) return { paths: 'file' };
  if (names.includes('DIR')) return { paths: 'dir' };
  return undefined;
}

/** The first argument after the command's name in its usage: DIR, FILE, a word or words ("bash|zsh|fish"), or none. */
function argumentOf(command: Command): Completes {
  if (command.positionals[1] === 0) return undefined;
  const token = command.usage.split(/\s+/)[2];
  if (token === undefined) return undefined;
  if (token === '[KIND/]NAME') return { recorded: true };
  if (/^[a-z][a-z|-]*$/.test(token)) return { words: token.split('|') };
  return pathsOf(token);
}

/** What a value flag completes to: its choices, the declared resources, or a path by its placeholder. */
function valueCompletes(spec: OptionSpec): Completes {
  if (spec.choices) return { words: [...spec.choices] };
  if (spec.resourceNames) return { resources: true };
  return pathsOf(spec.placeholder);
}

function flagView(long: string, spec: OptionSpec): FlagView {
  const takesValue = spec.type === 'string';
  return {
    long,
    ...(spec.short ? { short: spec.short } : {}),
    description: spec.description,
    takesValue,
    completes: takesValue ? valueCompletes(spec) : undefined,
  };
}

/** The commands as the scripts offer them, in --help order; every command gets --help (-h). */
export function commandViews(commands: readonly Command[]): CommandView[] {
  return commands.map((command) => ({
    name: command.name,
    summary: command.summary,
    flags: [
      ...Object.entries(command.options).map(([long, spec]) => flagView(long, spec)),
      { long: 'help', short: 'h', description: 'show this help', takesValue: false, completes: undefined },
    ],
    argument: argumentOf(command),
    repeats: /\.\.\.$/.test(command.usage.split(/\s+/)[2] ?? ''),
  }));
}

/** The spellings of a flag: --long, and -s when it has a short form. */
function spellings(flag: FlagView): string[] {
  return [`--${flag.long}`, ...(flag.short ? [`-${flag.short}`] : [])];
}

/** What bash's `case "$argument"` is told of a command's argument: dir, file, recorded, words:A B, or nothing. */
function bashArgument(argument: Completes): string {
  if (argument === undefined || 'resources' in argument) return '';
  if ('recorded' in argument) return 'recorded';
  return 'paths' in argument ? argument.paths : `words:${argument.words.join(' ')}`;
}

/** A bash `case` arm for one command: its flags, the flags whose value is a directory, a file, or something else, its argument. */
function bashArm(view: CommandView): string[] {
  const of = (test: (f: FlagView) => boolean): string => view.flags.filter(test).flatMap(spellings).join(' ');
  const argument = bashArgument(view.argument);
  // "--output=text,json -o=text,json": each spelling of an enum flag with its words
  const choices = view.flags.flatMap((f) =>
    f.completes !== undefined && 'words' in f.completes
      ? spellings(f).map((s) => `${s}=${(f.completes as { words: string[] }).words.join(',')}`)
      : [],
  );
  return [
    `    ${view.name})`,
    `      flags="${of(() => true)}"`,
    `      dir_flags="${of((f) => f.completes !== undefined && 'paths' in f.completes && f.completes.paths === 'dir')}"`,
    `      file_flags="${of((f) => f.completes !== undefined && 'paths' in f.completes && f.completes.paths === 'file')}"`,
    `      value_flags="${of((f) => f.takesValue)}"`,
    `      choices="${choices.join(' ')}"`,
    `      resource_flags="${of((f) => f.completes !== undefined && 'resources' in f.completes)}"`,
    `      argument="${argument}"`,
    '      ;;',
  ];
}

function bashScript(views: readonly CommandView[]): string {
  return [
    '# converge completion for bash. Load it with: source <(converge completion bash)',
    '# (or save it as ~/.local/share/bash-completion/completions/converge)',
    '_converge() {',
    '  local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"',
    '  COMPREPLY=()',
    '  if [[ $COMP_CWORD -eq 1 ]]; then',
    `    COMPREPLY=( $(compgen -W "${views.map((v) => v.name).join(' ')} --help --version" -- "$cur") )`,
    '    return 0',
    '  fi',
    '  local flags="" dir_flags="" file_flags="" value_flags="" choices="" resource_flags="" argument="" pair=""',
    '  case "${COMP_WORDS[1]}" in',
    ...views.flatMap(bashArm),
    '    *) return 0 ;;',
    '  esac',
    '  if [[ " $dir_flags " == *" $prev "* ]]; then COMPREPLY=( $(compgen -d -- "$cur") ); return 0; fi',
    '  if [[ " $file_flags " == *" $prev "* ]]; then COMPREPLY=( $(compgen -f -- "$cur") ); return 0; fi',
    '  for pair in $choices; do',
    '    if [[ "${pair%%=*}" == "$prev" ]]; then pair="${pair#*=}"; COMPREPLY=( $(compgen -W "${pair//,/ }" -- "$cur") ); return 0; fi',
    '  done',
    '  if [[ -n "$prev" && " $resource_flags " == *" $prev "* ]]; then',
    "    # the names declared in this line's manifest directory (its first argument, flags and their values skipped)",
    '    local i word dir="" skip=0',
    '    for (( i = 2; i < COMP_CWORD - 1; i++ )); do',
    '      word="${COMP_WORDS[i]}"',
    '      if [[ $skip -eq 1 ]]; then skip=0; continue; fi',
    '      if [[ "$word" == -* ]]; then [[ "$word" != *=* && " $value_flags " == *" $word "* ]] && skip=1; continue; fi',
    '      dir="$word"; break',
    '    done',
    '    [[ -n "$dir" ]] && COMPREPLY=( $(compgen -W "$(converge completion --targets -- "$dir" 2>/dev/null)" -- "$cur") )',
    '    return 0',
    '  fi',
    '  if [[ " $value_flags " == *" $prev "* ]]; then return 0; fi',
    '  if [[ "$cur" == -* ]]; then COMPREPLY=( $(compgen -W "$flags" -- "$cur") ); return 0; fi',
    '  case "$argument" in',
    '    dir) COMPREPLY=( $(compgen -d -- "$cur") ) ;;',
    '    file) COMPREPLY=( $(compgen -f -- "$cur") ) ;;',
    '    words:*) COMPREPLY=( $(compgen -W "${argument#words:}" -- "$cur") ) ;;',
    "    # the resources the line's Redis prefix knows (its --redis-url, --redis-prefix, --config, else the defaults)",
    '    recorded) COMPREPLY=( $(compgen -W "$(converge completion --recorded -- ' +
      '"${COMP_WORDS[@]:2:COMP_CWORD-2}" 2>/dev/null)" -- "$cur") ) ;;',
    '  esac',
    '  return 0',
    '}',
    'complete -o filenames -o bashdefault -F _converge converge',
    '',
  ].join('\n');
}

/** Words safe inside a zsh `_arguments` spec or `_describe` item: no brackets, colons, quotes or backslashes. */
function zshText(text: string): string {
  return text
    .replace(/[[\]:'"\\`$]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/** What follows a value flag's spec in zsh: the action that completes its value. */
function zshAction(completes: Completes): string {
  if (completes === undefined) return ' ';
  if ('resources' in completes) return '_converge_targets';
  if ('recorded' in completes) return '_converge_recorded';
  if ('paths' in completes) return completes.paths === 'dir' ? '_files -/' : '_files';
  return `(${completes.words.join(' ')})`;
}

function zshFlag(flag: FlagView): string {
  const described = `[${zshText(flag.description)}]${flag.takesValue ? `:${flag.long}:${zshAction(flag.completes)}` : ''}`;
  // A flag given once per value (--vars, --overlay, --target) may repeat.
  const names = spellings(flag);
  if (names.length === 1) return `'*${names[0]}${described}'`;
  return `'(${names.join(' ')})'{${names.join(',')}}'${described}'`;
}

function zshArm(view: CommandView): string[] {
  const argument =
    view.argument === undefined ? [] : [`'${view.repeats ? '*' : '1'}:argument:${zshAction(view.argument)}'`];
  return [
    `        ${view.name})`,
    `          _arguments -s ${[...view.flags.map(zshFlag), ...argument].join(' \\\n            ')}`,
    '          ;;',
  ];
}

/** Every spelling of a flag that takes a value, in any command: the words a search for the manifest directory skips the value of. */
function valueFlagWords(views: readonly CommandView[]): string {
  return [...new Set(views.flatMap((v) => v.flags.filter((f) => f.takesValue).flatMap(spellings)))].join(' ');
}

function zshScript(views: readonly CommandView[]): string {
  return [
    '#compdef converge',
    '# converge completion for zsh. Load it with: source <(converge completion zsh)',
    '# (or save it as _converge in a directory of $fpath)',
    "# --target: the names declared in the line's manifest directory (its first argument, flags and their values skipped)",
    '_converge_targets() {',
    `  local -a value_flags=(${valueFlagWords(views)}) names`,
    '  local i word dir="" skip=0',
    '  for (( i = 2; i < CURRENT; i++ )); do',
    '    word="${words[i]}"',
    '    if (( skip )); then skip=0; continue; fi',
    '    if [[ "$word" == -* ]]; then [[ "$word" != *=* && ${value_flags[(Ie)$word]} -gt 0 ]] && skip=1; continue; fi',
    '    dir="$word"; break',
    '  done',
    '  [[ -n "$dir" ]] || return 1',
    '  names=(${(f)"$(converge completion --targets -- "$dir" 2>/dev/null)"})',
    '  (( ${#names} )) && compadd -a names',
    '}',
    "# converge history: the resources the line's Redis prefix knows (its --redis-url, --redis-prefix, --config)",
    '_converge_recorded() {',
    '  local -a names',
    '  names=(${(f)"$(converge completion --recorded -- "${(@)words[2,CURRENT-1]}" 2>/dev/null)"})',
    '  (( ${#names} )) && compadd -a names',
    '}',
    '_converge() {',
    '  local state',
    "  _arguments -C '1:command:->command' '*::argument:->argument'",
    '  case $state in',
    '    command)',
    '      local -a commands',
    `      commands=(${views.map((v) => `'${v.name}:${zshText(v.summary)}'`).join(' ')})`,
    "      _describe 'command' commands",
    '      ;;',
    '    argument)',
    '      case $words[1] in',
    ...views.flatMap(zshArm),
    '      esac',
    '      ;;',
    '  esac',
    '}',
    'if [[ "${funcstack[1]}" == _converge ]]; then _converge "$@"; else compdef _converge converge; fi',
    '',
  ].join('\n');
}

/** Text inside single quotes in fish: backslashes and quotes escaped. */
function fishText(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/'/g, "\\'");
}

/** The longest description fish shows beside a candidate: fish repeats it for every value a flag offers. */
export const FISH_DESCRIPTION_MAX = 60;

/** A flag's or command's description cut to its first clause, within FISH_DESCRIPTION_MAX characters (at a word, with "…"). */
function fishShort(text: string): string {
  const clause = text.split(/(?:[;:] |\. )/)[0]!;
  if (clause.length <= FISH_DESCRIPTION_MAX) return clause;
  const cut = clause.slice(0, FISH_DESCRIPTION_MAX - 1);
  const space = cut.lastIndexOf(' ');
  return `${(space > FISH_DESCRIPTION_MAX / 2 ? cut.slice(0, space) : cut).replace(/[,\s]+$/, '')}…`;
}

function fishCompletes(completes: Completes): string {
  if (completes === undefined) return '';
  if ('resources' in completes) return " -a '(__converge_targets)'";
  if ('recorded' in completes) return " -a '(__converge_recorded)'";
  if ('paths' in completes) return completes.paths === 'dir' ? " -a '(__fish_complete_directories)'" : ' -F';
  return ` -a '${completes.words.join(' ')}'`;
}

function fishLines(view: CommandView): string[] {
  const when = `-n '__fish_seen_subcommand_from ${view.name}'`;
  const lines = view.flags.map((flag) => {
    const short = flag.short ? ` -s ${flag.short}` : '';
    // -x (a value, no file names) where the value is a word or a resource name; -r (a value, files allowed) otherwise
    const exclusive = flag.completes !== undefined && ('words' in flag.completes || 'resources' in flag.completes);
    const value = flag.takesValue ? ` ${exclusive ? '-x' : '-r'}${fishCompletes(flag.completes)}` : '';
    return `complete -c converge ${when} -l ${flag.long}${short}${value} -d '${fishText(fishShort(flag.description))}'`;
  });
  if (view.argument !== undefined) lines.push(`complete -c converge ${when}${fishCompletes(view.argument)}`);
  return lines;
}

function fishScript(views: readonly CommandView[]): string {
  return [
    '# converge completion for fish. Load it with: converge completion fish | source',
    '# (or save it as ~/.config/fish/completions/converge.fish)',
    'complete -c converge -f',
    "# --target: the names declared in the line's manifest directory (its first argument, flags and their values skipped)",
    'function __converge_targets',
    `    set -l value_flags ${valueFlagWords(views)}`,
    '    set -l skip 0',
    '    for word in (commandline -opc)[3..-1]',
    '        if test $skip -eq 1; set skip 0; continue; end',
    "        if string match -q -- '-*' $word",
    "            if not string match -q -- '*=*' $word; and contains -- $word $value_flags; set skip 1; end",
    '            continue',
    '        end',
    '        converge completion --targets -- $word 2>/dev/null',
    '        return',
    '    end',
    'end',
    "# converge history: the resources the line's Redis prefix knows (its --redis-url, --redis-prefix, --config)",
    'function __converge_recorded',
    '    converge completion --recorded -- (commandline -opc)[3..-1] 2>/dev/null',
    'end',
    ...views.map(
      (v) => `complete -c converge -n '__fish_use_subcommand' -a ${v.name} -d '${fishText(fishShort(v.summary))}'`,
    ),
    ...views.flatMap(fishLines),
    '',
  ].join('\n');
}

/** The completion script of `shell` for these commands. */
export function completionScript(shell: Shell, commands: readonly Command[]): string {
  const views = commandViews(commands);
  if (shell === 'bash') return bashScript(views);
  if (shell === 'zsh') return zshScript(views);
  return fishScript(views);
}
