import { InputError } from '../input-error';

/** The three per-microbatch operations of a ZeroBubble pipeline stage. */
export type OpKind = 'F' | 'B' | 'W';

export const OP_F = 0;
export const OP_B = 1;
export const OP_W = 2;
export const OP_KINDS: readonly OpKind[] = ['F', 'B', 'W'];

/**
 * Ops are encoded as small integers on the hot path: code = microbatch * 3 + kind.
 * The text form is PyTorch pipelining's: `F3`, `B3`, `W3` (0-based microbatch).
 */
export function encodeOp(kind: number, microbatch: number): number {
  return microbatch * 3 + kind;
}

export function opKind(code: number): number {
  return code % 3;
}

export function opMicrobatch(code: number): number {
  return (code - (code % 3)) / 3;
}

export function formatOp(code: number): string {
  return OP_KINDS[opKind(code)] + String(opMicrobatch(code));
}

const OP_PATTERN = /^([FBW])(0|[1-9][0-9]*)$/;

/** Parses `F3` into its code; throws InputError naming the token when it is not an op of an N-microbatch pipeline. */
export function parseOp(token: unknown, microbatches: number, where: string): number {
  if (typeof token !== 'string') throw new InputError(`${where}: expected an op like "F0", got ${JSON.stringify(token)}`);
  const match = OP_PATTERN.exec(token);
  if (!match) throw new InputError(`${where}: "${token}" is not an op (expected F<j>, B<j> or W<j>)`);
  const microbatch = Number(match[2]);
  if (microbatch >= microbatches) {
    throw new InputError(`${where}: "${token}" names microbatch ${microbatch}, but the pipeline has ${microbatches} (0..${microbatches - 1})`);
  }
  return encodeOp(OP_KINDS.indexOf(match[1] as OpKind), microbatch);
}
