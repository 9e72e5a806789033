// git: its subcommands, the configuration keys it only uses as data, and the options and
// subcommands that run commands named on the command line or in configuration.

import {
  type Handler,
  HELP,
  longOptionNamed,
  type OptionSpec,
  scanOptions,
  unknownOption,
} from './options.js';
import type { ProgramContext, ShellWord } from './types.js';

const GIT_SUBCOMMANDS = new Set(
  (
    'add am annotate apply archive backfill bisect blame branch bugreport bundle cat-file check-attr ' +
    'check-ignore check-mailmap check-ref-format checkout checkout-index cherry cherry-pick citool clean ' +
    'clone column commit commit-graph commit-tree config count-objects credential credential-cache ' +
    'credential-store describe diagnose diff diff-files diff-index diff-pairs diff-tree difftool ' +
    'fast-export fast-import fetch fetch-pack fmt-merge-msg for-each-ref for-each-repo format-patch fsck ' +
    'gc get-tar-commit-id grep gui hash-object help http-backend index-pack init interpret-trailers lfs log ' +
    'ls-files ls-remote ls-tree mailinfo mailsplit maintenance merge merge-base merge-file merge-index ' +
    'merge-one-file merge-tree mergetool mktag mktree multi-pack-index mv name-rev notes pack-objects ' +
    'pack-redundant pack-refs patch-id prune prune-packed pull push range-diff read-tree rebase receive-pack ' +
    'reflog refs remote repack replace replay request-pull rerere reset restore rev-list rev-parse revert rm ' +
    'send-pack shortlog show show-branch show-index show-ref sparse-checkout stage stash status stripspace ' +
    'submodule switch symbolic-ref tag unpack-file unpack-objects update-index update-ref update-server-info ' +
    'upload-archive upload-pack var verify-commit verify-pack verify-tag version whatchanged worktree write-tree'
  ).split(' '),
);

/** Subcommands that run commands from their configuration or arguments in ways not parsed here. */
/** Options that give a commit, tag or note its message, so that no editor starts. */
const MESSAGE_OPTIONS = /^(?:-[a-zA-Z]*[mFC]|--(?:message|file|reuse-message|no-edit|fixup)(?:=|$))/;

/**
 * Whether this git command starts an editor or an interactive prompt (as git's manual says for
 * each): what it starts, or undefined.
 */
function startsEditor(subcommand: string, args: readonly ShellWord[]): string | undefined {
  const texts = args.map((word) => word.text);
  const has = (pattern: RegExp) => texts.some((text) => pattern.test(text));
  const forcedEdit = has(/^(?:-e|--edit)$/);
  switch (subcommand) {
    case 'commit':
      return forcedEdit || !has(MESSAGE_OPTIONS) ? 'starting an editor' : undefined;
    case 'tag':
      return forcedEdit ||
        (has(/^(?:-[a-zA-Z]*[asu]|--annotate|--sign|--local-user)/) &&
          !has(/^(?:-[a-zA-Z]*[mF]|--message|--file)/))
        ? 'starting an editor'
        : undefined;
    case 'notes':
      return /^(?:add|append|edit)$/.test(texts.find((text) => !text.startsWith('-')) ?? '') &&
        !has(/^(?:-[mFcC]|--message|--file|--reuse-message|--reedit-message)/)
        ? 'starting an editor'
        : undefined;
    case 'rebase':
      return has(/^(?:-[a-zA-Z]*i|--interactive)$/) ? 'starting an editor (--interactive)' : undefined;
    case 'merge':
    case 'pull':
    case 'cherry-pick':
    case 'revert':
      return forcedEdit ? 'starting an editor (--edit)' : undefined;
    case 'add':
    case 'checkout':
    case 'reset':
    case 'restore':
    case 'stash':
    case 'clean':
      return has(/^(?:-[a-zA-Z]*[pie]|--patch|--interactive|--edit)$/)
        ? 'asking interactively (its e answer starts an editor)'
        : undefined;
    case 'am':
      return has(/^(?:-i|--interactive)$/) ? 'asking interactively' : undefined;
    default:
      return undefined;
  }
}

const GIT_RUNNING_SUBCOMMANDS = new Set([
  'filter-branch',
  'hook',
  'shell',
  'instaweb',
  'web--browse',
  'send-email',
  'daemon',
  'p4',
  'svn',
  'cvsimport',
  'cvsserver',
  'archimport',
  'quiltimport',
]);

/** Configuration keys git only uses as data (who commits, colours, advice, line endings). */
const HARMLESS_GIT_KEYS = new Set([
  'user.name',
  'user.email',
  'user.signingkey',
  'author.name',
  'author.email',
  'committer.name',
  'committer.email',
  'init.defaultbranch',
  'core.autocrlf',
  'core.safecrlf',
  'core.filemode',
  'core.quotepath',
  'core.ignorecase',
  'core.eol',
  'core.whitespace',
  'core.abbrev',
  'commit.gpgsign',
  'tag.gpgsign',
  'pull.rebase',
  'pull.ff',
  'push.default',
  'push.autosetupremote',
  'merge.conflictstyle',
  'merge.ff',
  'diff.renames',
  'diff.algorithm',
  'diff.mnemonicprefix',
  'diff.noprefix',
  'log.date',
  'log.decorate',
  'fetch.prune',
  'rebase.autostash',
  'rebase.autosquash',
  'rerere.enabled',
  'status.short',
  'status.showuntrackedfiles',
  'branch.autosetupmerge',
  'gc.auto',
  'maintenance.auto',
  'safe.directory',
  'core.pager.off',
]);

function isHarmlessGitKey(key: string): boolean {
  const lower = key.toLowerCase();
  if (/^(?:color|advice)\./.test(lower)) return true;
  return HARMLESS_GIT_KEYS.has(lower);
}

const gitGlobalSpec: OptionSpec = {
  shortValue: 'Cc',
  shortFlags: 'pPvh',
  long: {
    'config-env': 'value',
    'exec-path': 'optional',
    'git-dir': 'value',
    'work-tree': 'value',
    namespace: 'value',
    bare: 'flag',
    paginate: 'flag',
    'no-pager': 'flag',
    'no-replace-objects': 'flag',
    'no-lazy-fetch': 'flag',
    'no-optional-locks': 'flag',
    'no-advice': 'flag',
    'literal-pathspecs': 'flag',
    'glob-pathspecs': 'flag',
    'noglob-pathspecs': 'flag',
    'icase-pathspecs': 'flag',
    'list-cmds': 'value',
    'attr-source': 'value',
    'super-prefix': 'value',
    'html-path': 'flag',
    'man-path': 'flag',
    'info-path': 'flag',
    ...HELP,
  },
};

function gitConfigValueHazard(context: ProgramContext, pair: ShellWord | undefined, where: string): void {
  if (!pair) return;
  const key = pair.text.split('=')[0]!;
  if (pair.dynamic || !isHarmlessGitKey(key)) {
    context.hazard(
      `git configuration ${key} given with ${where} (git runs commands named in its configuration)`,
    );
  }
}

export const git: Handler = (context) => {
  const { words } = context;
  const scan = scanOptions(words, 1, gitGlobalSpec);
  if (scan.unknown) return unknownOption(context, scan.unknown);
  for (const option of scan.options) {
    if (option.name === '-c') gitConfigValueHazard(context, option.value, 'git -c');
    if (option.name === '--config-env')
      context.hazard('git --config-env (configuration taken from a variable)');
    if (option.name === '--exec-path' && option.value)
      context.hazard('git --exec-path (where git finds its programs)');
    if (option.name === '--git-dir' || option.name === '--bare') {
      context.hazard(`git ${option.name} (a repository whose configuration this policy cannot see)`);
    }
  }
  const subcommandWord = words[scan.end];
  if (!subcommandWord) return;
  const subcommand = subcommandWord.text;
  const args = words.slice(scan.end + 1);
  if (subcommandWord.dynamic) {
    context.hazard('a git subcommand computed at run time');
    return;
  }
  if (GIT_RUNNING_SUBCOMMANDS.has(subcommand)) {
    context.hazard(`git ${subcommand} (it runs commands this policy cannot check)`);
    return;
  }
  if (!GIT_SUBCOMMANDS.has(subcommand)) {
    context.hazard(`git ${subcommand}, which is not a git command (an alias or a git-${subcommand} program)`);
    return;
  }
  const argText = (index: number) => args[index]?.text;
  // git's parse-options takes unambiguous abbreviations of long options and clusters of short
  // ones (`--ex=CMD`, `-ix CMD`), as getopt_long does.
  const commandStrings = (names: string[]) => {
    const longNames = names.filter((name) => name.startsWith('--')).map((name) => name.slice(2));
    const shortLetters = names.filter((name) => !name.startsWith('--')).map((name) => name.slice(1));
    for (let index = 0; index < args.length; index += 1) {
      const word = args[index]!;
      const text = word.text;
      if (text === '--') return;
      const long = longOptionNamed(text, longNames);
      // A short cluster: the letter's value is the rest of the word, or the next word.
      let letter: string | undefined;
      let rest = '';
      if (/^-[A-Za-z]/.test(text)) {
        for (let at = 1; at < text.length && /[A-Za-z]/.test(text[at]!) && text[at] !== 'X'; at += 1) {
          if (shortLetters.includes(text[at]!)) {
            letter = text[at];
            rest = text.slice(at + 1);
            break;
          }
        }
      }
      if (long !== undefined) {
        const equals = text.indexOf('=');
        if (equals >= 0) {
          context.script(
            { text: text.slice(equals + 1), dynamic: word.dynamic },
            `the command given to git ${subcommand} --${long}`,
          );
        } else if (args[index + 1]) {
          context.script(args[index + 1]!, `the command given to git ${subcommand} --${long}`);
          index += 1;
        }
      } else if (letter !== undefined) {
        if (rest !== '')
          context.script(
            { text: rest, dynamic: word.dynamic },
            `the command given to git ${subcommand} -${letter}`,
          );
        else if (args[index + 1]) {
          context.script(args[index + 1]!, `the command given to git ${subcommand} -${letter}`);
          index += 1;
        }
      }
    }
  };
  const editing = startsEditor(subcommand, args);
  if (editing && context.stdin.kind !== 'inherited' && context.stdin.kind !== 'closed') {
    // The editor (vi by default) reads its commands from the input the line gives it (`:!cmd`).
    context.hazard(
      `git ${subcommand} ${editing} with its input from the command line (an editor reads commands from it)`,
    );
  }
  switch (subcommand) {
    case 'config': {
      const options = args.filter((word) => word.text.startsWith('-'));
      const positional = args.filter(
        (word, index) =>
          !word.text.startsWith('-') &&
          !/^(?:-f|--file|--blob|--type|-t|--default|--comment|--value)$/.test(args[index - 1]?.text ?? ''),
      );
      const optionNames = options.map((word) => word.text.split('=')[0]);
      if (optionNames.some((name) => name === '-e' || name === '--edit')) {
        context.hazard('git config --edit (it runs an editor)');
        return;
      }
      const reading = optionNames.some((name) =>
        /^--(?:get|get-all|get-regexp|get-urlmatch|get-color|get-colorbool|list|show-origin|show-scope|name-only|unset|unset-all|remove-section|rename-section)$|^-l$/.test(
          name!,
        ),
      );
      // `git config set KEY VALUE` (new syntax) or `git config KEY VALUE`.
      const verbs = new Set(['get', 'list', 'unset', 'remove-section', 'rename-section', 'edit']);
      if (positional[0] && verbs.has(positional[0].text)) {
        if (positional[0].text === 'edit') context.hazard('git config edit (it runs an editor)');
        return;
      }
      const values = positional[0]?.text === 'set' ? positional.slice(1) : positional;
      if (reading || values.length < 2) return;
      gitConfigValueHazard(context, values[0], 'git config');
      return;
    }
    case 'clone':
    case 'init': {
      for (let index = 0; index < args.length; index += 1) {
        const text = args[index]!.text;
        if (text === '-c' || text === '--config') {
          gitConfigValueHazard(context, args[index + 1], `git ${subcommand} -c`);
          index += 1;
        } else if (text.startsWith('--config=')) {
          gitConfigValueHazard(
            context,
            { text: text.slice(9), dynamic: args[index]!.dynamic },
            `git ${subcommand} -c`,
          );
        } else if (/^--(?:template|separate-git-dir|bare|mirror)(?:=|$)/.test(text)) {
          context.hazard(
            `git ${subcommand} ${text.split('=')[0]} (a repository whose configuration this policy cannot see)`,
          );
        }
      }
      commandStrings(['--upload-pack', '-u']);
      return;
    }
    case 'rebase':
      commandStrings(['--exec', '-x']);
      return;
    case 'difftool':
      commandStrings(['--extcmd', '-x']);
      return;
    case 'grep':
      for (const word of args) {
        if (word.text === '--') break;
        const long = longOptionNamed(word.text, ['open-files-in-pager']);
        const value =
          long !== undefined
            ? word.text.includes('=')
              ? word.text.slice(word.text.indexOf('=') + 1)
              : undefined
            : /^-[A-Za-z]*O(.+)$/s.exec(word.text)?.[1];
        if (value !== undefined) {
          context.script({ text: value, dynamic: word.dynamic }, 'the pager given to git grep -O');
        }
      }
      return;
    case 'fetch':
    case 'pull':
    case 'ls-remote':
    case 'fetch-pack':
    case 'archive':
    case 'push':
    case 'send-pack':
    case 'submodule':
      commandStrings(['--upload-pack', '--receive-pack', '--exec', '-u']);
      if (subcommand === 'submodule') {
        const foreach = args.findIndex((word) => word.text === 'foreach');
        if (foreach >= 0) {
          let start = foreach + 1;
          while (args[start] && /^(?:--recursive|-q|--quiet)$/.test(args[start]!.text)) start += 1;
          const rest = args.slice(start);
          if (rest.some((word) => word.dynamic))
            context.hazard('a command for git submodule foreach computed at run time');
          else if (rest.length > 0) {
            context.script(
              rest.map((word) => word.text).join(' '),
              'the command given to git submodule foreach',
            );
          }
        }
      }
      return;
    case 'bisect':
      if (argText(0) === 'run') context.command(args.slice(1));
      return;
    default:
      return;
  }
};
