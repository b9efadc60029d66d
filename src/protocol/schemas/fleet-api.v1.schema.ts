// Generated from schemas/fleet-api.v1.schema.json by test/schema-types.test.ts; do not edit (PIPEMORPH_WRITE_SCHEMAS=1 regenerates it).
export const fleetApiV1Schema = {
  "$schema": "http://json-schema.org/draft-07/schema#",
  "$id": "https://pipemorph.dev/schemas/fleet-api.v1.schema.json",
  "title": "Daemon HTTP API: GET /fleet",
  "description": "The fleet view (docs/fleet.md): every job's link and compute evidence in node terms, put together from what every replica recorded in Redis, and the suspects that explain the slow evidence, most confident first. Every replica serves the same view (as of its last computation, every fleet.intervalMs).",
  "type": "object",
  "additionalProperties": false,
  "required": [
    "replica",
    "enabled",
    "computedAt",
    "jobs",
    "asOf",
    "suspects",
    "nodes",
    "pairs",
    "boundaries"
  ],
  "definitions": {
    "count": {
      "type": "integer",
      "minimum": 0
    },
    "name": {
      "type": "string",
      "minLength": 1
    },
    "names": {
      "type": "array",
      "items": {
        "$ref": "#/definitions/name"
      }
    },
    "tally": {
      "type": "object",
      "description": "Links (one job's evidence on one node pair each) healthy and slow, their samples, the largest extra delay of a slow one (ms) and the jobs with a slow one.",
      "required": [
        "healthyLinks",
        "slowLinks",
        "healthySamples",
        "slowSamples",
        "extraMs",
        "slowJobs"
      ],
      "properties": {
        "healthyLinks": {
          "$ref": "#/definitions/count"
        },
        "slowLinks": {
          "$ref": "#/definitions/count"
        },
        "healthySamples": {
          "$ref": "#/definitions/count"
        },
        "slowSamples": {
          "$ref": "#/definitions/count"
        },
        "extraMs": {
          "type": "number",
          "minimum": 0
        },
        "slowJobs": {
          "$ref": "#/definitions/names"
        }
      }
    },
    "pairTally": {
      "allOf": [
        {
          "$ref": "#/definitions/tally"
        }
      ],
      "type": "object",
      "required": [
        "a",
        "b"
      ],
      "properties": {
        "a": {
          "$ref": "#/definitions/name"
        },
        "b": {
          "$ref": "#/definitions/name"
        }
      }
    },
    "suspect": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "id",
        "kind",
        "nodes",
        "localities",
        "confidence",
        "slowLinks",
        "slowSamples",
        "healthyLinks",
        "extraMs",
        "jobs",
        "reason",
        "action"
      ],
      "properties": {
        "id": {
          "type": "string",
          "pattern": "^(nic|uplink|boundary|node-pair|compute):.+$",
          "description": "nic:<node>, uplink:<locality>, boundary:<a>|<b>, node-pair:<a>|<b>, compute:<node>"
        },
        "kind": {
          "enum": [
            "nic",
            "uplink",
            "boundary",
            "node-pair",
            "compute"
          ]
        },
        "nodes": {
          "$ref": "#/definitions/names"
        },
        "localities": {
          "$ref": "#/definitions/names"
        },
        "confidence": {
          "type": "number",
          "exclusiveMinimum": 0,
          "maximum": 1
        },
        "slowLinks": {
          "$ref": "#/definitions/count"
        },
        "slowSamples": {
          "$ref": "#/definitions/count"
        },
        "healthyLinks": {
          "$ref": "#/definitions/count",
          "description": "Healthy links that vouch for the suspect: its peers' elsewhere, the inside of its localities."
        },
        "extraMs": {
          "type": "number",
          "minimum": 0
        },
        "jobs": {
          "$ref": "#/definitions/names",
          "description": "Jobs whose evidence names it (their pages: /jobs/:id/view on the replica that leads each)."
        },
        "reason": {
          "type": "string",
          "minLength": 1
        },
        "action": {
          "type": "string",
          "minLength": 1,
          "description": "The runbook's first step."
        }
      }
    }
  },
  "properties": {
    "replica": {
      "type": "string",
      "description": "The replica that served it."
    },
    "enabled": {
      "type": "boolean",
      "description": "fleet.enabled: false, the view stays empty."
    },
    "computedAt": {
      "type": "number",
      "minimum": 0,
      "description": "When this replica computed it, ms since the epoch; 0: not yet."
    },
    "jobs": {
      "$ref": "#/definitions/names",
      "description": "Jobs whose evidence is in it."
    },
    "asOf": {
      "type": "number",
      "minimum": 0,
      "description": "Newest evidence, ms since the epoch (0 without any)."
    },
    "suspects": {
      "type": "array",
      "items": {
        "$ref": "#/definitions/suspect"
      }
    },
    "nodes": {
      "type": "array",
      "items": {
        "allOf": [
          {
            "$ref": "#/definitions/tally"
          }
        ],
        "type": "object",
        "required": [
          "node",
          "locality",
          "slowPeers",
          "jobs",
          "compute"
        ],
        "properties": {
          "node": {
            "$ref": "#/definitions/name"
          },
          "locality": {
            "type": [
              "string",
              "null"
            ]
          },
          "slowPeers": {
            "$ref": "#/definitions/count"
          },
          "jobs": {
            "$ref": "#/definitions/names"
          },
          "compute": {
            "type": "object",
            "additionalProperties": false,
            "required": [
              "healthy",
              "slow",
              "ratio",
              "slowJobs"
            ],
            "properties": {
              "healthy": {
                "$ref": "#/definitions/count"
              },
              "slow": {
                "$ref": "#/definitions/count"
              },
              "ratio": {
                "type": "number",
                "minimum": 0,
                "description": "Largest f+b+w over the other replicas' of a slow rank on the node (0: none slow)."
              },
              "slowJobs": {
                "$ref": "#/definitions/names"
              }
            }
          }
        }
      }
    },
    "pairs": {
      "type": "array",
      "description": "Node pairs with at least one slow link.",
      "items": {
        "$ref": "#/definitions/pairTally"
      }
    },
    "boundaries": {
      "type": "array",
      "description": "Links between two localities (a < b), or inside one (a = b).",
      "items": {
        "$ref": "#/definitions/pairTally"
      }
    }
  }
} as const;
