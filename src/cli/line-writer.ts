import { closeSync, openSync, writeSync } from 'node:fs';
import { InputError } from '../core/input-error';

const FLUSH_CHARS = 1 << 20;

/** Lines to a file (or stdout) through a buffer of about 1 MiB: a long recording is written in bounded memory. */
export class LineWriter {
  private chunks: string[] = [];
  private size = 0;
  private readonly fd: number | null;
  lines = 0;

  /** `path` undefined: stdout. */
  constructor(path?: string) {
    try {
      this.fd = path === undefined ? null : openSync(path, 'w');
    } catch (error) {
      throw new InputError(`cannot write ${path}: ${(error as Error).message}`);
    }
  }

  line(text: string): void {
    this.chunks.push(text, '\n');
    this.size += text.length + 1;
    this.lines++;
    if (this.size >= FLUSH_CHARS) this.flush();
  }

  flush(): void {
    if (this.size === 0) return;
    const chunk = this.chunks.join('');
    this.chunks = [];
    this.size = 0;
    // process.stdout is synchronous for files and pipes on Linux; a file is written directly.
    if (this.fd === null) process.stdout.write(chunk);
    else writeSync(this.fd, chunk);
  }

  close(): void {
    this.flush();
    if (this.fd !== null) closeSync(this.fd);
  }
}
