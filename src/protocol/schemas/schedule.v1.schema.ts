// Generated from schemas/schedule.v1.schema.json by test/schema-types.test.ts; do not edit (PIPEMORPH_WRITE_SCHEMAS=1 regenerates it).
export const scheduleV1Schema = {
  "$schema": "http://json-schema.org/draft-07/schema#",
  "$id": "https://pipemorph.dev/schemas/schedule.v1.schema.json",
  "title": "Published schedule (protocol v1)",
  "description": "Written by the daemon as JSON strings at `pipemorph:{<jobId>}:pending` (prepared) and `pipemorph:{<jobId>}:schedule` (committed, the one in force from effectiveIteration).",
  "type": "object",
  "additionalProperties": false,
  "required": [
    "protocol",
    "jobId",
    "version",
    "epoch",
    "state",
    "effectiveIteration",
    "createdAt",
    "pipelines",
    "delegation",
    "reason",
    "prediction"
  ],
  "properties": {
    "protocol": {
      "const": 1
    },
    "jobId": {
      "type": "string",
      "pattern": "^[A-Za-z0-9._-]{1,64}$"
    },
    "version": {
      "type": "integer",
      "minimum": 1,
      "description": "Monotonic per job, never reused."
    },
    "epoch": {
      "type": "integer",
      "minimum": 1,
      "description": "Fencing epoch of the daemon replica that wrote it; ranks ignore anything from an epoch lower than the highest they have seen."
    },
    "state": {
      "enum": [
        "prepared",
        "committed"
      ]
    },
    "effectiveIteration": {
      "type": "integer",
      "minimum": 0,
      "description": "First iteration that may run this schedule."
    },
    "createdAt": {
      "type": "number",
      "description": "Unix time, ms."
    },
    "pipelines": {
      "type": "array",
      "minItems": 1,
      "description": "One entry per group of data-parallel replicas that share a schedule; every replica appears in exactly one entry.",
      "items": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "dpReplicas",
          "warmup",
          "stages"
        ],
        "properties": {
          "dpReplicas": {
            "type": "array",
            "minItems": 1,
            "items": {
              "type": "integer",
              "minimum": 0
            }
          },
          "warmup": {
            "type": "array",
            "items": {
              "type": "integer",
              "minimum": 1
            },
            "description": "Warm-up forward count per stage."
          },
          "stages": {
            "type": "array",
            "description": "Per stage, the ordered ops: F<j>, B<j>, W<j> with j the 0-based microbatch.",
            "items": {
              "type": "array",
              "items": {
                "type": "string",
                "pattern": "^[FBW](0|[1-9][0-9]*)$"
              }
            }
          }
        }
      }
    },
    "delegation": {
      "type": "array",
      "description": "Ranks whose pipeline sends and receives go through CPU delegates; a rank not listed runs GPU-direct.",
      "items": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "rank",
          "sendQueues",
          "recvQueues"
        ],
        "properties": {
          "rank": {
            "type": "integer",
            "minimum": 0
          },
          "sendQueues": {
            "type": "integer",
            "minimum": 1,
            "description": "Delegate send queues needed to keep up with production."
          },
          "recvQueues": {
            "type": "integer",
            "minimum": 1
          }
        }
      }
    },
    "reason": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "kind",
        "links",
        "detail"
      ],
      "properties": {
        "kind": {
          "enum": [
            "initial",
            "straggler",
            "recovery",
            "nic-failure",
            "compute",
            "remap",
            "rebalance"
          ]
        },
        "links": {
          "type": "array",
          "items": {
            "type": "object",
            "additionalProperties": false,
            "required": [
              "kind",
              "fromRank",
              "toRank",
              "extraMs"
            ],
            "properties": {
              "kind": {
                "enum": [
                  "pipeline",
                  "data-parallel"
                ]
              },
              "fromRank": {
                "type": "integer",
                "minimum": 0
              },
              "toRank": {
                "type": "integer",
                "minimum": 0
              },
              "dp": {
                "type": "integer",
                "minimum": 0
              },
              "link": {
                "type": "integer",
                "minimum": 0,
                "description": "Pipeline link index (between stage link and link + 1)."
              },
              "extraMs": {
                "type": "number",
                "description": "Estimated extra one-way delay over the healthy baseline."
              },
              "error": {
                "type": [
                  "string",
                  "null"
                ]
              }
            }
          }
        },
        "detail": {
          "type": "string"
        }
      }
    },
    "prediction": {
      "type": "object",
      "additionalProperties": false,
      "description": "Predicted iteration times, ms: each replica's pipeline priced with the ranks' transport, then, for a job that registered `dataParallel` with dp > 1, each stage's ring all-reduce once its replicas are done, priced with the measured data-parallel links of the layout (docs/protocol.md sec. 3).",
      "required": [
        "previousMs",
        "newMs"
      ],
      "properties": {
        "previousMs": {
          "type": [
            "number",
            "null"
          ],
          "description": "Predicted iteration time of the schedule in force under current conditions (null for the first schedule)."
        },
        "newMs": {
          "type": "number",
          "description": "Predicted iteration time of this schedule under current conditions."
        },
        "staticMs": {
          "type": "number",
          "description": "Predicted iteration time of the initial plan under current conditions."
        }
      }
    },
    "traceId": {
      "type": "string",
      "pattern": "^[0-9a-f]{32}$"
    },
    "topology": {
      "type": "object",
      "additionalProperties": false,
      "description": "Present once the job has been re-mapped away from its registration layout (docs/protocol.md sec. 5.5). Ranks switch to it at effectiveIteration together with the schedule: they rebuild their pipeline and data-parallel communicators, and the ranks listed in `moved` load their new stage's weights and optimizer state first.",
      "required": [
        "version",
        "sinceVersion",
        "ranks",
        "rings",
        "moved"
      ],
      "properties": {
        "version": {
          "type": "integer",
          "minimum": 1,
          "description": "Topology version: +1 with every re-mapping; a rank rebuilds its communicators only when it changes."
        },
        "sinceVersion": {
          "type": "integer",
          "minimum": 1,
          "description": "Schedule version that introduced this topology version."
        },
        "ranks": {
          "type": "array",
          "minItems": 1,
          "description": "Every rank of the job exactly once with its new coordinates; the TP ranks of a node move with it.",
          "items": {
            "type": "object",
            "additionalProperties": false,
            "required": [
              "rank",
              "dp",
              "pp"
            ],
            "properties": {
              "rank": {
                "type": "integer",
                "minimum": 0
              },
              "dp": {
                "type": "integer",
                "minimum": 0
              },
              "pp": {
                "type": "integer",
                "minimum": 0
              }
            }
          }
        },
        "rings": {
          "type": "array",
          "description": "Per stage, the data-parallel ring order as dp indices (a permutation of 0..dp-1).",
          "items": {
            "type": "array",
            "items": {
              "type": "integer",
              "minimum": 0
            }
          }
        },
        "moved": {
          "type": "array",
          "description": "Ranks whose stage changes at this topology version.",
          "items": {
            "type": "integer",
            "minimum": 0
          }
        }
      }
    },
    "layers": {
      "type": "object",
      "additionalProperties": false,
      "description": "Present once the job's layers have been re-balanced away from the split it registered (docs/protocol.md sec. 5.7, docs/rebalancing.md). Ranks switch to it at effectiveIteration together with the schedule: the layers listed in `moves` are handed over (weights and optimizer state) at the boundary before it.",
      "required": [
        "version",
        "sinceVersion",
        "perStage",
        "moves"
      ],
      "properties": {
        "version": {
          "type": "integer",
          "minimum": 1,
          "description": "Split version: +1 with every re-balance; a rank moves layers only when it changes."
        },
        "sinceVersion": {
          "type": "integer",
          "minimum": 1,
          "description": "Schedule version that introduced this split."
        },
        "perStage": {
          "type": "array",
          "minItems": 1,
          "description": "Layers each stage holds from effectiveIteration on, in stage order (contiguous, model order).",
          "items": {
            "type": "integer",
            "minimum": 1
          }
        },
        "moves": {
          "type": "array",
          "description": "Runs of layers whose stage changes at this split version (empty when carried over).",
          "items": {
            "type": "object",
            "additionalProperties": false,
            "required": [
              "firstLayer",
              "lastLayer",
              "fromStage",
              "toStage",
              "bytes"
            ],
            "properties": {
              "firstLayer": {
                "type": "integer",
                "minimum": 0
              },
              "lastLayer": {
                "type": "integer",
                "minimum": 0
              },
              "fromStage": {
                "type": "integer",
                "minimum": 0
              },
              "toStage": {
                "type": "integer",
                "minimum": 0
              },
              "bytes": {
                "type": "number",
                "minimum": 0,
                "description": "Weights, gradients and optimizer state of the run (the registration's stateBytes)."
              }
            }
          }
        }
      }
    }
  }
} as const;
