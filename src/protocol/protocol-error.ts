/** A message from outside that the daemon refuses; the message says why in one line. */
export class ProtocolError extends Error {
  /**
   * The message's `type` when the message parsed as JSON and named a known type (a schema-invalid
   * report is still a report); undefined when it could not be parsed or named no known type.
   */
  readonly messageType?: string;

  constructor(message: string, messageType?: string) {
    super(message);
    this.name = 'ProtocolError';
    this.messageType = messageType;
  }
}
