/**
 * A problem with input that came from outside (a profile, a schedule, options).
 * Edges (CLI, API, ingest) turn it into a one-line message; anything else is a bug.
 */
export class InputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InputError';
  }
}
