// Generated from schemas/ack.v1.schema.json by test/schema-types.test.ts; do not edit (PIPEMORPH_WRITE_SCHEMAS=1 regenerates it).
export const ackV1Schema = {
  "$schema": "http://json-schema.org/draft-07/schema#",
  "$id": "https://pipemorph.dev/schemas/ack.v1.schema.json",
  "title": "Acknowledgement of a prepared schedule (protocol v1)",
  "description": "Sent by each reporting rank on the same stream as its reports, `pipemorph:{<jobId>}:reports`, in answer to a `prepare` control event.",
  "type": "object",
  "additionalProperties": false,
  "required": [
    "type",
    "protocol",
    "jobId",
    "rank",
    "version",
    "epoch",
    "iteration",
    "accepted"
  ],
  "properties": {
    "type": {
      "const": "ack"
    },
    "protocol": {
      "const": 1
    },
    "jobId": {
      "type": "string",
      "pattern": "^[A-Za-z0-9._-]{1,64}$"
    },
    "rank": {
      "type": "integer",
      "minimum": 0
    },
    "version": {
      "type": "integer",
      "minimum": 1
    },
    "epoch": {
      "type": "integer",
      "minimum": 1
    },
    "iteration": {
      "type": "integer",
      "minimum": 0,
      "description": "The iteration the rank is running when it acknowledges."
    },
    "accepted": {
      "type": "boolean",
      "description": "false when the rank is already at or past the effective iteration, or cannot apply the schedule."
    },
    "reason": {
      "type": "string",
      "maxLength": 500
    }
  }
} as const;
