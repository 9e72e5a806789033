// A tiny ustar writer and reader for the Docker archive API (putArchive/getArchive). Only what the
// sandbox needs: regular files, directories and symlinks, PAX/GNU long names, sizes > 8 GB.
// Written here rather than pulling tar-stream so the docker backend adds no dependency.

const BLOCK = 512;

type TarEntryType = 'file' | 'directory' | 'symlink' | 'other';

interface TarEntry {
  path: string;
  type: TarEntryType;
  mode: number;
  /** Target of a symlink or hard link; empty otherwise. */
  linkname: string;
  data: Uint8Array;
}

interface TarFileInput {
  path: string;
  data: Uint8Array;
  mode?: number;
  mtimeSeconds?: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function writeString(header: Uint8Array, offset: number, length: number, value: string): void {
  const bytes = encoder.encode(value);
  header.set(bytes.subarray(0, length), offset);
}

function writeOctal(header: Uint8Array, offset: number, length: number, value: number): void {
  // length-1 octal digits followed by NUL, as ustar readers expect.
  const text = Math.max(0, Math.floor(value))
    .toString(8)
    .padStart(length - 1, '0');
  writeString(header, offset, length - 1, text);
  header[offset + length - 1] = 0;
}

function paddedLength(size: number): number {
  return Math.ceil(size / BLOCK) * BLOCK;
}

function buildHeader(options: {
  name: string;
  size: number;
  mode: number;
  mtime: number;
  typeflag: string;
}): Uint8Array {
  const header = new Uint8Array(BLOCK);
  writeString(header, 0, 100, options.name);
  writeOctal(header, 100, 8, options.mode & 0o7777);
  writeOctal(header, 108, 8, 0); // uid: root inside the container
  writeOctal(header, 116, 8, 0); // gid
  writeOctal(header, 124, 12, options.size);
  writeOctal(header, 136, 12, options.mtime);
  header.fill(0x20, 148, 156); // checksum is computed with its own field as spaces
  writeString(header, 156, 1, options.typeflag);
  writeString(header, 257, 6, 'ustar');
  writeString(header, 263, 2, '00');
  let sum = 0;
  for (const byte of header) sum += byte;
  writeString(header, 148, 7, `${sum.toString(8).padStart(6, '0')}\0`);
  header[155] = 0x20;
  return header;
}

function paxRecord(key: string, value: string): string {
  // Each record is "<len> <key>=<value>\n" where len counts itself.
  const body = ` ${key}=${value}\n`;
  let length = encoder.encode(body).length + 1;
  while (String(length).length + encoder.encode(body).length !== length) length += 1;
  return `${length}${body}`;
}

/** Build a tar archive (with the two trailing zero blocks) holding the given regular files. */
export function createTar(files: readonly TarFileInput[]): Uint8Array {
  const chunks: Uint8Array[] = [];
  let total = 0;
  const push = (chunk: Uint8Array) => {
    chunks.push(chunk);
    total += chunk.length;
  };
  const pushData = (data: Uint8Array) => {
    push(data);
    const pad = paddedLength(data.length) - data.length;
    if (pad > 0) push(new Uint8Array(pad));
  };
  for (const file of files) {
    const mtime = file.mtimeSeconds ?? Math.floor(Date.now() / 1000);
    const mode = file.mode ?? 0o644;
    let name = file.path;
    const needsPax = encoder.encode(name).length > 99 || file.data.length > 0o77777777777;
    if (needsPax) {
      let records = paxRecord('path', name);
      if (file.data.length > 0o77777777777) records += paxRecord('size', String(file.data.length));
      const body = encoder.encode(records);
      push(buildHeader({ name: 'PaxHeader', size: body.length, mode: 0o644, mtime, typeflag: 'x' }));
      pushData(body);
      name = name.slice(-99);
    }
    push(buildHeader({ name, size: Math.min(file.data.length, 0o77777777777), mode, mtime, typeflag: '0' }));
    pushData(file.data);
  }
  push(new Uint8Array(BLOCK * 2));
  const out = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}

function readString(block: Uint8Array, offset: number, length: number): string {
  const slice = block.subarray(offset, offset + length);
  const end = slice.indexOf(0);
  return decoder.decode(end === -1 ? slice : slice.subarray(0, end));
}

function readNumber(block: Uint8Array, offset: number, length: number): number {
  const first = block[offset] ?? 0;
  if (first & 0x80) {
    // GNU base-256 encoding for large values.
    let value = 0;
    for (let index = offset + 1; index < offset + length; index += 1)
      value = value * 256 + (block[index] ?? 0);
    return value;
  }
  const text = readString(block, offset, length).trim();
  return text === '' ? 0 : Number.parseInt(text, 8);
}

function parsePax(data: Uint8Array): Record<string, string> {
  const text = decoder.decode(data);
  const result: Record<string, string> = {};
  let index = 0;
  while (index < text.length) {
    const space = text.indexOf(' ', index);
    if (space === -1) break;
    const length = Number.parseInt(text.slice(index, space), 10);
    if (!Number.isFinite(length) || length <= 0) break;
    // Lengths count bytes, not UTF-16 units; re-slice via bytes to stay exact.
    const recordBytes = encoder.encode(text.slice(index)).subarray(0, length);
    const record = decoder.decode(recordBytes);
    const equals = record.indexOf('=');
    if (equals !== -1) result[record.slice(record.indexOf(' ') + 1, equals)] = record.slice(equals + 1, -1);
    index += record.length;
  }
  return result;
}

function isZeroBlock(block: Uint8Array): boolean {
  for (const byte of block) if (byte !== 0) return false;
  return true;
}

/** Parse a whole tar archive into entries. Throws on a truncated or corrupt archive. */
export function parseTar(archive: Uint8Array): TarEntry[] {
  const entries: TarEntry[] = [];
  let offset = 0;
  let pendingPath: string | undefined;
  let pendingLink: string | undefined;
  let pendingSize: number | undefined;
  while (offset + BLOCK <= archive.length) {
    const header = archive.subarray(offset, offset + BLOCK);
    if (isZeroBlock(header)) break;
    let checksum = 0;
    for (let index = 0; index < BLOCK; index += 1)
      checksum += index >= 148 && index < 156 ? 0x20 : (header[index] ?? 0);
    if (checksum !== readNumber(header, 148, 8))
      throw new Error(`corrupt tar header at byte ${offset} (bad checksum)`);
    const typeflag = String.fromCharCode(header[156] ?? 0);
    const size = pendingSize ?? readNumber(header, 124, 12);
    const dataStart = offset + BLOCK;
    if (dataStart + size > archive.length)
      throw new Error(`truncated tar archive: entry at byte ${offset} needs ${size} bytes`);
    const data = archive.subarray(dataStart, dataStart + size);
    offset = dataStart + paddedLength(size);
    if (typeflag === 'x') {
      const pax = parsePax(data);
      if (pax.path !== undefined) pendingPath = pax.path;
      if (pax.linkpath !== undefined) pendingLink = pax.linkpath;
      if (pax.size !== undefined) pendingSize = Number.parseInt(pax.size, 10);
      continue;
    }
    if (typeflag === 'g') continue;
    if (typeflag === 'L') {
      pendingPath = readString(data, 0, data.length);
      continue;
    }
    if (typeflag === 'K') {
      pendingLink = readString(data, 0, data.length);
      continue;
    }
    const magic = readString(header, 257, 6);
    const prefix = magic.startsWith('ustar') ? readString(header, 345, 155) : '';
    const rawName = readString(header, 0, 100);
    const path = pendingPath ?? (prefix ? `${prefix}/${rawName}` : rawName);
    const linkname = pendingLink ?? readString(header, 157, 100);
    pendingPath = undefined;
    pendingLink = undefined;
    pendingSize = undefined;
    const type: TarEntryType =
      typeflag === '0' || typeflag === '\0' || typeflag === '7'
        ? 'file'
        : typeflag === '5'
          ? 'directory'
          : typeflag === '2'
            ? 'symlink'
            : 'other';
    entries.push({
      path,
      type,
      mode: readNumber(header, 100, 8),
      linkname,
      data: type === 'file' ? data.slice() : new Uint8Array(0),
    });
  }
  return entries;
}
