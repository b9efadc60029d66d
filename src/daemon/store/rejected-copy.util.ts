/** What is kept of a refused message: a bounded prefix, its original size, and whether it was cut. */
export interface RejectedCopy {
  /** The message, or its first `maxBytes` UTF-8 bytes followed by a marker naming the original size. */
  text: string;
  /** Original size in UTF-8 bytes. */
  bytes: number;
  truncated: boolean;
}

/** Longest reason kept (protocol §9: reasons are one line, at most 500 characters). */
export const MAX_REASON_CHARS = 500;

/**
 * Bounds the copy of a refused message kept in a rejected stream: a 64 MiB report must cost
 * kilobytes there, not 64 MiB (issue 10). With the stream's entry bound this bounds its bytes.
 */
export function rejectedCopy(raw: string | null, maxBytes: number): RejectedCopy {
  if (raw === null) return { text: '', bytes: 0, truncated: false };
  const bytes = Buffer.byteLength(raw, 'utf8');
  if (bytes <= maxBytes) return { text: raw, bytes, truncated: false };
  // A cut inside a multi-byte character decodes to U+FFFD: harmless in a copy kept for humans.
  const head = Buffer.from(raw.slice(0, maxBytes), 'utf8').subarray(0, maxBytes).toString('utf8');
  return { text: `${head}...[truncated: ${bytes} bytes, first ${maxBytes} kept]`, bytes, truncated: true };
}

/** A reason cut to MAX_REASON_CHARS characters (reasons quote parts of the message). */
export function boundedReason(reason: string): string {
  return reason.length <= MAX_REASON_CHARS ? reason : `${reason.slice(0, MAX_REASON_CHARS - 3)}...`;
}
