// Generated from schemas/control-event.v1.schema.json by test/schema-types.test.ts; do not edit (PIPEMORPH_WRITE_SCHEMAS=1 regenerates it).
export const controlEventV1Schema = {
  "$schema": "http://json-schema.org/draft-07/schema#",
  "$id": "https://pipemorph.dev/schemas/control-event.v1.schema.json",
  "title": "Control event (protocol v1)",
  "description": "Written by the daemon as field `m` of an entry on the stream `pipemorph:{<jobId>}:control`; ranks read it with XREAD (no consumer group).",
  "type": "object",
  "additionalProperties": false,
  "required": [
    "type",
    "protocol",
    "jobId",
    "version",
    "epoch",
    "effectiveIteration"
  ],
  "properties": {
    "type": {
      "enum": [
        "prepare",
        "commit",
        "abort"
      ]
    },
    "protocol": {
      "const": 1
    },
    "jobId": {
      "type": "string",
      "pattern": "^[A-Za-z0-9._-]{1,64}$"
    },
    "version": {
      "type": "integer",
      "minimum": 1
    },
    "epoch": {
      "type": "integer",
      "minimum": 1
    },
    "effectiveIteration": {
      "type": "integer",
      "minimum": 0
    },
    "reason": {
      "type": "string",
      "maxLength": 500
    }
  }
} as const;
