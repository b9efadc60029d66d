import Redis from 'ioredis';
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { InputError } from '../core/input-error';
import { parseRegistration } from '../protocol/message-parser';
import { ProtocolError } from '../protocol/protocol-error';
import { Registration } from '../protocol/protocol-v1.type';
import { JOB_ID_PATTERN, jobKeys, MESSAGE_FIELD } from '../protocol/redis-keys';
import { RecordedMessage } from './replay-recording';

/** A recorded job: its registration and its reports stream's messages, read as they are consumed. */
export interface Recording {
  registration: Registration;
  /** Where the recording came from, for the output. */
  source: string;
  messages: AsyncIterable<RecordedMessage>;
  close(): Promise<void>;
}

/** Stream entries read per XRANGE call: memory holds one page. */
export const REDIS_PAGE = 1000;

function registrationOrError(raw: string, where: string): Registration {
  try {
    return parseRegistration(raw);
  } catch (error) {
    if (error instanceof ProtocolError) throw new InputError(`${where} is not a valid registration: ${error.message}`);
    throw error;
  }
}

/**
 * A JSONL recording (docs/protocol.md, "Recordings"): line 1 the job's registration, then one
 * message of its reports stream per line (reports; acks and blank lines are skipped). Read line
 * by line: a recording of any length replays in bounded memory.
 */
export async function openJsonlRecording(path: string): Promise<Recording> {
  const stream = createReadStream(path, { encoding: 'utf8' });
  const opened = new Promise<void>((resolve, reject) => {
    stream.once('ready', () => resolve());
    stream.once('error', (error) => reject(new InputError(`cannot read recording ${path}: ${error.message}`)));
  });
  await opened;
  const lines = createInterface({ input: stream, crlfDelay: Infinity })[Symbol.asyncIterator]();
  const head = await lines.next();
  if (head.done || head.value.trim() === '') throw new InputError(`recording ${path} is empty: line 1 must be the job's registration`);
  const registration = registrationOrError(head.value, `line 1 of ${path}`);
  async function* messages(): AsyncIterable<RecordedMessage> {
    let line = 1;
    for (;;) {
      const next = await lines.next();
      if (next.done) return;
      line++;
      if (next.value.trim() === '') continue;
      yield { raw: next.value, where: `line ${line}` };
    }
  }
  return { registration, source: path, messages: messages(), close: async () => void stream.destroy() };
}

/** The stored spec of a job (`pipemorph:{J}:spec`): the accepted registration and its registrations-stream id. */
interface StoredSpec {
  registration: unknown;
  registrationId?: string;
}

/**
 * A job's streams in Redis: the accepted registration from its spec key, then its reports stream
 * from after the newest `registered` marker (the reports of the registration in force; a job that
 * registered again restarted), read with XRANGE a page at a time. The stream holds the newest
 * `ingest.streamMaxLen` entries the ranks wrote (trimmed with MAXLEN ~).
 */
export async function openRedisRecording(url: string, jobId: string): Promise<Recording> {
  if (!JOB_ID_PATTERN.test(jobId)) throw new InputError(`--job must be a job id (${JOB_ID_PATTERN.source}), got ${JSON.stringify(jobId)}`);
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 5000, enableOfflineQueue: false });
  // Surfaced by the command that failed, with the connection's own error when there is one (ECONNREFUSED).
  let connectionError: Error | null = null;
  redis.on('error', (error: Error) => (connectionError = error));
  const server = url.replace(/\/\/[^@/]*@/, '//***@');
  const where = `${server} job ${jobId}`;
  const fail = (error: unknown): never => {
    redis.disconnect();
    if (error instanceof InputError) throw error;
    throw new InputError(`cannot read job ${jobId} from Redis at ${server}: ${(connectionError ?? (error as Error)).message}`);
  };
  const keys = jobKeys(jobId);
  let registration: Registration;
  let start = '-';
  try {
    await redis.connect();
    const raw = await redis.get(keys.spec);
    if (raw === null) throw new InputError(`no job ${jobId} in Redis at ${server}: key ${keys.spec} does not exist`);
    let stored: StoredSpec;
    try {
      stored = JSON.parse(raw) as StoredSpec;
    } catch (error) {
      throw new InputError(`${keys.spec} is not JSON: ${(error as Error).message}`);
    }
    registration = registrationOrError(JSON.stringify(stored?.registration ?? null), keys.spec);
    // The newest registered marker, searched from the end a page at a time.
    let end = '+';
    search: for (;;) {
      const page = (await redis.xrevrange(keys.reports, end, '-', 'COUNT', REDIS_PAGE)) as Array<[string, string[]]>;
      for (const [id, fields] of page) {
        const message = fieldOf(fields);
        if (message !== null && message.includes('"registered"')) {
          try {
            if (JSON.parse(message).type === 'registered') {
              start = `(${id}`;
              break search;
            }
          } catch {
            // not a marker
          }
        }
      }
      if (page.length < REDIS_PAGE) break;
      end = `(${page[page.length - 1][0]}`;
    }
  } catch (error) {
    return fail(error);
  }
  async function* messages(): AsyncIterable<RecordedMessage> {
    let from = start;
    for (;;) {
      let page: Array<[string, string[]]>;
      try {
        page = (await redis.xrange(keys.reports, from, '+', 'COUNT', REDIS_PAGE)) as Array<[string, string[]]>;
      } catch (error) {
        return fail(error);
      }
      for (const [id, fields] of page) yield { raw: fieldOf(fields), where: `entry ${id}` };
      if (page.length < REDIS_PAGE) return;
      from = `(${page[page.length - 1][0]}`;
    }
  }
  return { registration, source: where, messages: messages(), close: async () => redis.disconnect() };
}

function fieldOf(fields: string[]): string | null {
  for (let k = 0; k + 1 < fields.length; k += 2) if (fields[k] === MESSAGE_FIELD) return fields[k + 1];
  return null;
}
