import ackSchema from '../../schemas/ack.v1.schema.json';
import registrationSchema from '../../schemas/registration.v1.schema.json';
import reportSchema from '../../schemas/rank-report.v1.schema.json';
import { ProtocolError } from './protocol-error';
import { checkRegistrationLayers } from './registration-layers.util';
import { Ack, RankReport, Registration } from './protocol-v1.type';
import { JOB_ID_PATTERN } from './redis-keys';
import { compileSchema } from './schema-validator';

/** Largest report or ack accepted from a rank; a report with 64 links is far below. */
export const MAX_MESSAGE_BYTES = 256 * 1024;
/** Largest registration: 65,536 ranks at about 70 bytes each. */
export const MAX_REGISTRATION_BYTES = 16 * 1024 * 1024;

const registration = compileSchema<Registration>(registrationSchema);
const report = compileSchema<RankReport>(reportSchema);
const ack = compileSchema<Ack>(ackSchema);

/**
 * Written by the daemon itself on a job's reports stream after a (re-)registration, so the
 * replica that owns the job reloads it in order with the reports.
 */
export interface RegisteredMarker {
  type: 'registered';
  protocol: 1;
  jobId: string;
  /** Id of the registrations-stream entry that was accepted. */
  registrationId: string;
}

export type ReportStreamMessage = RankReport | Ack | RegisteredMarker;

function parseJson(raw: string | null, maxBytes = MAX_MESSAGE_BYTES): unknown {
  if (raw === null) throw new ProtocolError('entry has no field "m"');
  // Checked before JSON.parse, in UTF-8 bytes as Redis stores them: an oversized entry costs no
  // parse and no object graph. The UTF-16 length bounds the byte count from below (a longer string
  // is refused without counting) and from above by a factor of 3 (a short one needs no count).
  if (raw.length > maxBytes) throw new ProtocolError(`message is at least ${raw.length} bytes, more than ${maxBytes}`);
  const bytes = raw.length * 3 <= maxBytes ? raw.length : Buffer.byteLength(raw, 'utf8');
  if (bytes > maxBytes) throw new ProtocolError(`message is ${bytes} bytes, more than ${maxBytes}`);
  try {
    return JSON.parse(raw);
  } catch (error) {
    throw new ProtocolError(`not valid JSON: ${(error as Error).message}`);
  }
}

function checkPerStage(name: string, values: readonly number[] | undefined, stages: number): void {
  if (values && values.length !== stages) throw new ProtocolError(`${name} has ${values.length} entries, the job has ${stages} stages`);
}

/** Parses and checks a registration: schema, then what the schema cannot say (sizes agree, every rank exactly once). */
export function parseRegistration(raw: string | null): Registration {
  const value = parseJson(raw, MAX_REGISTRATION_BYTES);
  const problem = registration.check(value);
  if (problem) throw new ProtocolError(`registration: ${problem}`);
  const r = value as Registration;
  checkPerStage('memory.deviceBytes', r.memory.deviceBytes, r.stages);
  checkPerStage('memory.activationBytes', r.memory.activationBytes, r.stages);
  checkPerStage('computeMs.fMs', r.computeMs?.fMs, r.stages);
  checkPerStage('computeMs.bMs', r.computeMs?.bMs, r.stages);
  checkPerStage('computeMs.wMs', r.computeMs?.wMs, r.stages);
  checkPerStage('dataParallel.gradientBytes', r.dataParallel?.gradientBytes, r.stages);
  checkRegistrationLayers(r);
  const expected = r.stages * r.dp * r.tp;
  if (r.ranks.length !== expected) throw new ProtocolError(`registration lists ${r.ranks.length} ranks, stages x dp x tp = ${expected}`);
  const ids = new Set<number>();
  const coords = new Set<string>();
  for (const rank of r.ranks) {
    if (rank.dp >= r.dp || rank.pp >= r.stages || rank.tp >= r.tp) {
      throw new ProtocolError(`rank ${rank.rank} has coordinates (dp ${rank.dp}, pp ${rank.pp}, tp ${rank.tp}) outside dp ${r.dp} x stages ${r.stages} x tp ${r.tp}`);
    }
    const key = `${rank.dp},${rank.pp},${rank.tp}`;
    if (ids.has(rank.rank)) throw new ProtocolError(`rank ${rank.rank} is listed twice`);
    if (coords.has(key)) throw new ProtocolError(`two ranks share coordinates (dp ${rank.dp}, pp ${rank.pp}, tp ${rank.tp})`);
    ids.add(rank.rank);
    coords.add(key);
  }
  return r;
}

/** Parses one entry of `pipemorph:{jobId}:reports`: a report, an ack, or the daemon's own registered marker. */
export function parseReportStreamMessage(raw: string | null, jobId: string): ReportStreamMessage {
  const value = parseJson(raw) as { type?: unknown; jobId?: unknown };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new ProtocolError('message must be a JSON object');
  let problem: string | null;
  switch (value.type) {
    case 'report':
      problem = report.check(value);
      break;
    case 'ack':
      problem = ack.check(value);
      break;
    case 'registered':
      problem =
        typeof value.jobId === 'string' && JOB_ID_PATTERN.test(value.jobId) && typeof (value as { registrationId?: unknown }).registrationId === 'string'
          ? null
          : 'registered marker without a valid jobId and registrationId';
      break;
    default:
      problem = `/type must be "report" or "ack", got ${JSON.stringify(value.type)}`;
  }
  // A message of a known type is counted and filed under that type even when it is invalid.
  const known = value.type === 'report' || value.type === 'ack' || value.type === 'registered' ? value.type : undefined;
  if (problem) throw new ProtocolError(`${String(value.type ?? 'message')}: ${problem}`, known);
  if (value.jobId !== jobId) throw new ProtocolError(`message names job ${JSON.stringify(value.jobId)} but arrived on the stream of job "${jobId}"`, known);
  return value as ReportStreamMessage;
}
