// Settings shared by the four file tools, with hermes-agent's defaults.
import { z } from 'zod';

export const fileToolsSettingsSchema = z
  .object({
    /** Refuse paths outside the sandbox workspace (default true); false only for trusted local use. */
    confine: z.boolean().default(true),
    /** A formatted read longer than this is refused (hermes `file_read_max_chars`). */
    maxReadChars: z.number().int().positive().default(100_000),
    /** Longest line shown by read_file before it is cut. */
    maxLineLength: z.number().int().positive().default(2000),
    /** Largest `limit` read_file accepts. */
    maxLines: z.number().int().positive().default(2000),
    /**
     * read_file reads at most this many bytes of a file (lines past them are out of its reach; the
     * result says so), so a huge file costs this much at most.
     */
    maxScanBytes: z
      .number()
      .int()
      .positive()
      .default(64 * 1024 * 1024),
    /** Time limit of one sandbox call a file tool makes (ms); a call past it is stopped. */
    timeoutMs: z.number().int().positive().default(60_000),
    /** Largest file patch will rewrite. */
    maxPatchBytes: z
      .number()
      .int()
      .positive()
      .default(8 * 1024 * 1024),
    /** Longest match content shown by search_files. */
    maxMatchChars: z.number().int().positive().default(500),
  })
  .strict();

export type FileToolsSettings = z.input<typeof fileToolsSettingsSchema>;
export type ResolvedFileToolsSettings = z.output<typeof fileToolsSettingsSchema>;
