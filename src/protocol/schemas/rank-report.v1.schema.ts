// Generated from schemas/rank-report.v1.schema.json by test/schema-types.test.ts; do not edit (PIPEMORPH_WRITE_SCHEMAS=1 regenerates it).
export const rankReportV1Schema = {
  "$schema": "http://json-schema.org/draft-07/schema#",
  "$id": "https://pipemorph.dev/schemas/rank-report.v1.schema.json",
  "title": "Per-iteration rank report (protocol v1)",
  "description": "Appended after every iteration by each reporting rank (tp = 0) as field `m` of an entry on the stream `pipemorph:{<jobId>}:reports`.",
  "type": "object",
  "additionalProperties": false,
  "required": [
    "type",
    "protocol",
    "jobId",
    "rank",
    "iteration",
    "scheduleVersion",
    "computeMs",
    "links"
  ],
  "properties": {
    "type": {
      "const": "report"
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
    "iteration": {
      "type": "integer",
      "minimum": 0,
      "description": "The iteration this report measures (0-based)."
    },
    "scheduleVersion": {
      "type": "integer",
      "minimum": 0,
      "description": "Version of the schedule the iteration ran (0 before any schedule)."
    },
    "epoch": {
      "type": "integer",
      "minimum": 0,
      "description": "Optional: the highest fencing epoch the rank has seen (control events, schedules). Lets the daemon keep epochs monotonic when Redis loses its counters (protocol section 5.6)."
    },
    "iterationMs": {
      "type": "number",
      "minimum": 0,
      "maximum": 86400000,
      "description": "Duration of the iteration as the rank measured it, ms. Optional; the daemon uses it to choose how many iterations ahead a switch takes effect."
    },
    "computeMs": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "f",
        "b",
        "w"
      ],
      "description": "Median F, B and W time of this rank's stage over the iteration's microbatches, ms.",
      "properties": {
        "f": {
          "type": "number",
          "minimum": 0,
          "maximum": 3600000
        },
        "b": {
          "type": "number",
          "minimum": 0,
          "maximum": 3600000
        },
        "w": {
          "type": "number",
          "minimum": 0,
          "maximum": 3600000
        }
      }
    },
    "memory": {
      "type": "object",
      "additionalProperties": false,
      "properties": {
        "devicePeakBytes": {
          "type": "number",
          "minimum": 0
        },
        "hostPeakBytes": {
          "type": "number",
          "minimum": 0
        }
      }
    },
    "links": {
      "type": "array",
      "maxItems": 64,
      "description": "Every link this rank sent on during the iteration.",
      "items": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "peer",
          "kind",
          "bytes",
          "medianMs",
          "maxMs",
          "delegated"
        ],
        "properties": {
          "peer": {
            "type": "integer",
            "minimum": 0,
            "description": "Rank at the other end."
          },
          "kind": {
            "enum": [
              "pipeline",
              "data-parallel"
            ]
          },
          "bytes": {
            "type": "number",
            "minimum": 0,
            "description": "Size of one message."
          },
          "medianMs": {
            "type": "number",
            "minimum": 0,
            "maximum": 3600000,
            "description": "Median time of one send, from launch to completion."
          },
          "maxMs": {
            "type": "number",
            "minimum": 0,
            "maximum": 3600000
          },
          "count": {
            "type": "integer",
            "minimum": 0,
            "description": "Messages sent on this link in the iteration."
          },
          "delegated": {
            "type": "boolean",
            "description": "Whether sends on this link went through CPU delegates."
          },
          "error": {
            "enum": [
              null,
              "nic-failure",
              "timeout"
            ],
            "description": "A transport failure seen on the GPU-direct path."
          }
        }
      }
    },
    "delegation": {
      "type": "object",
      "additionalProperties": false,
      "properties": {
        "enabled": {
          "type": "boolean"
        },
        "sendQueues": {
          "type": "integer",
          "minimum": 0
        },
        "recvQueues": {
          "type": "integer",
          "minimum": 0
        }
      }
    },
    "sentAt": {
      "type": "number",
      "description": "Unix time of sending, ms (diagnostics only)."
    }
  }
} as const;
