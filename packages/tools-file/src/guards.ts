// Refusals that do not depend on the sandbox: device files, binary file types, and system or
// credential paths that the file tools never write (hermes-agent's lists; the model is trained
// on these messages).
import { posix } from 'node:path';

const DEVICE_PATHS = new Set([
  '/dev/zero',
  '/dev/random',
  '/dev/urandom',
  '/dev/full',
  '/dev/stdin',
  '/dev/tty',
  '/dev/console',
  '/dev/stdout',
  '/dev/stderr',
  '/dev/fd/0',
  '/dev/fd/1',
  '/dev/fd/2',
]);

export function isDevicePath(absolute: string): boolean {
  return DEVICE_PATHS.has(absolute) || absolute.startsWith('/proc/self/fd/');
}

const BINARY_EXTENSIONS: ReadonlySet<string> = new Set([
  '.png',
  '.jpg',
  '.jpeg',
  '.gif',
  '.webp',
  '.bmp',
  '.ico',
  '.tif',
  '.tiff',
  '.psd',
  '.zip',
  '.tar',
  '.gz',
  '.tgz',
  '.bz2',
  '.xz',
  '.7z',
  '.rar',
  '.zst',
  '.exe',
  '.dll',
  '.so',
  '.dylib',
  '.o',
  '.a',
  '.class',
  '.jar',
  '.pyc',
  '.wasm',
  '.bin',
  '.pdf',
  '.doc',
  '.docx',
  '.xls',
  '.xlsx',
  '.ppt',
  '.pptx',
  '.mp3',
  '.mp4',
  '.wav',
  '.flac',
  '.ogg',
  '.avi',
  '.mov',
  '.mkv',
  '.webm',
  '.ttf',
  '.otf',
  '.woff',
  '.woff2',
  '.sqlite',
  '.db',
  '.parquet',
  '.npy',
  '.pt',
  '.safetensors',
]);

/** The binary extension of `path`, if it has one. */
export function binaryExtension(path: string): string | undefined {
  const extension = posix.extname(path).toLowerCase();
  return BINARY_EXTENSIONS.has(extension) ? extension : undefined;
}

const SENSITIVE_PREFIXES = ['/etc/', '/boot/', '/usr/lib/systemd/', '/private/etc/', '/private/var/'];
const SENSITIVE_EXACT = new Set(['/var/run/docker.sock', '/run/docker.sock']);

/** hermes `_check_sensitive_path`: the message for a system path, or undefined. */
export function sensitivePathError(absolute: string, shown: string): string | undefined {
  if (SENSITIVE_EXACT.has(absolute) || SENSITIVE_PREFIXES.some((prefix) => absolute.startsWith(prefix))) {
    return `Refusing to write to sensitive system path: ${shown}\nUse the terminal tool with sudo if you need to modify system files.`;
  }
  return undefined;
}

// Credential and profile files under any home directory.
const PROTECTED_HOME =
  /^\/(?:root|home\/[^/]+|Users\/[^/]+)\/(?:\.ssh\/|\.aws\/|\.kube\/|\.gnupg\/|\.docker\/config\.json$|\.netrc$|\.npmrc$|\.pypirc$|\.git-credentials$|\.bashrc$|\.bash_profile$|\.zshrc$|\.profile$|\.hermes\/\.env$)/;

/** hermes write-deny list: the message for a credential file, or undefined. */
export function writeDeniedError(absolute: string, shown: string): string | undefined {
  if (
    PROTECTED_HOME.test(absolute) ||
    absolute === '/etc/shadow' ||
    absolute === '/etc/passwd' ||
    absolute === '/etc/sudoers' ||
    absolute.startsWith('/etc/sudoers.d/')
  ) {
    return `Write denied: '${shown}' is a protected system/credential file.`;
  }
  return undefined;
}

/** hermes: more than 30% control characters (not \n \r \t) in the first 1000 chars, or a NUL. */
export function looksBinary(text: string): boolean {
  const sample = text.slice(0, 1000);
  if (sample.length === 0) return false;
  if (sample.includes('\0')) return true;
  let control = 0;
  for (const char of sample) {
    const code = char.codePointAt(0)!;
    if ((code < 32 && code !== 9 && code !== 10 && code !== 13) || code === 0x7f || code === 0xfffd)
      control++;
  }
  return control / sample.length > 0.3;
}
