import { FromSchema } from 'json-schema-to-ts';
import { configSchema } from '../../protocol/schemas/config.schema';

/**
 * The daemon's configuration, validated once at start-up: the type is inferred from
 * schemas/config.schema.json (keys, bounds and meaning are documented there and in
 * docs/operations.md), so the two cannot disagree.
 */
export type PipemorphConfig = FromSchema<typeof configSchema>;

export const PIPEMORPH_CONFIG = Symbol('PIPEMORPH_CONFIG');
