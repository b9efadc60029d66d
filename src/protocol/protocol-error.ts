/** A message from outside that the daemon refuses; the message says why in one line. */
export class ProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProtocolError';
  }
}
