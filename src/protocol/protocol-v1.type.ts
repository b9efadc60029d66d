/**
 * Wire protocol v1 between training ranks and the daemon. The JSON Schemas in /schemas are the
 * one definition: the daemon validates against them, the Python client too, and these types are
 * inferred from them (json-schema-to-ts; test/schema-types.test.ts keeps the `as const` modules in
 * ./schemas in step with the files). Field documentation lives in the schemas and docs/protocol.md.
 */
import { FromSchema } from 'json-schema-to-ts';
import { ackV1Schema } from './schemas/ack.v1.schema';
import { controlEventV1Schema } from './schemas/control-event.v1.schema';
import { rankReportV1Schema } from './schemas/rank-report.v1.schema';
import { registrationV1Schema } from './schemas/registration.v1.schema';
import { scheduleV1Schema } from './schemas/schedule.v1.schema';

export const PROTOCOL_VERSION = 1;

/** A job registration (schemas/registration.v1.schema.json). */
export type Registration = FromSchema<typeof registrationV1Schema>;
/** One rank of a registration; `locality` is its failure or network domain (rack, leaf switch, datacenter). */
export type RankCoordinates = Registration['ranks'][number];
/** The data-parallel all-reduce, for pricing slow data-parallel links and re-mapping ranks away from them. */
export type DataParallelSpec = NonNullable<Registration['dataParallel']>;

/** A rank's report of one iteration (schemas/rank-report.v1.schema.json). */
export type RankReport = FromSchema<typeof rankReportV1Schema>;
export type LinkSample = RankReport['links'][number];
export type LinkKind = LinkSample['kind'];
export type LinkError = NonNullable<LinkSample['error']>;

/** A rank's answer to a prepare (schemas/ack.v1.schema.json). */
export type Ack = FromSchema<typeof ackV1Schema>;

/** What ranks append to their job's reports stream. */
export type RankMessage = RankReport | Ack;

/** A prepared or committed schedule (schemas/schedule.v1.schema.json). */
export type PublishedSchedule = FromSchema<typeof scheduleV1Schema>;
export type PipelineAssignment = PublishedSchedule['pipelines'][number];
export type DelegationToggle = PublishedSchedule['delegation'][number];
export type ReasonKind = PublishedSchedule['reason']['kind'];
export type ReasonLink = PublishedSchedule['reason']['links'][number];
/** Where every rank sits once a schedule is in force, when that differs from the registration (docs/protocol.md sec. 5.5). */
export type TopologyAssignment = NonNullable<PublishedSchedule['topology']>;

/** A prepare, commit or abort on a job's control stream (schemas/control-event.v1.schema.json). */
export type ControlEvent = FromSchema<typeof controlEventV1Schema>;
