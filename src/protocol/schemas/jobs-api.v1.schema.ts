// Generated from schemas/jobs-api.v1.schema.json by test/schema-types.test.ts; do not edit (PIPEMORPH_WRITE_SCHEMAS=1 regenerates it).
export const jobsApiV1Schema = {
  "$schema": "http://json-schema.org/draft-07/schema#",
  "$id": "https://pipemorph.dev/schemas/jobs-api.v1.schema.json",
  "title": "Daemon HTTP API: GET /jobs and GET /jobs/:id",
  "description": "Read-only views of the jobs one daemon replica owns (docs/operations.md, 'The jobs API'). Numbers the daemon does not know yet (NaN inside the daemon) are null. `GET /jobs` answers a jobList, `GET /jobs/:id` a jobDetail (404 when another replica owns the job, 400 for a malformed id). Reason, prediction and delegation entries have the shapes of the published schedule (schedule.v1.schema.json).",
  "oneOf": [
    {
      "$ref": "#/definitions/jobList"
    },
    {
      "$ref": "#/definitions/jobDetail"
    }
  ],
  "definitions": {
    "ms": {
      "type": [
        "number",
        "null"
      ],
      "description": "Milliseconds; null when unknown (no sample yet)."
    },
    "count": {
      "type": "integer",
      "minimum": 0
    },
    "rank": {
      "type": "integer",
      "minimum": 0
    },
    "linkError": {
      "enum": [
        "nic-failure",
        "timeout",
        null
      ]
    },
    "jobList": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "replica",
        "jobs"
      ],
      "properties": {
        "replica": {
          "type": "string",
          "description": "Id of the answering replica (owner id in the job leases)."
        },
        "jobs": {
          "type": "array",
          "items": {
            "$ref": "#/definitions/jobSummary"
          }
        }
      }
    },
    "jobSummary": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "jobId",
        "stages",
        "microbatches",
        "dp",
        "tp",
        "epoch",
        "iteration",
        "iterationMs",
        "scheduleVersion",
        "handshake",
        "stragglers",
        "delegatedRanks",
        "staleRanks",
        "topology"
      ],
      "properties": {
        "jobId": {
          "type": "string",
          "pattern": "^[A-Za-z0-9._-]{1,64}$"
        },
        "stages": {
          "type": "integer",
          "minimum": 1
        },
        "microbatches": {
          "type": "integer",
          "minimum": 1
        },
        "dp": {
          "type": "integer",
          "minimum": 1
        },
        "tp": {
          "type": "integer",
          "minimum": 1
        },
        "epoch": {
          "type": "integer",
          "minimum": 0,
          "description": "Fencing epoch of the owning replica's claim."
        },
        "iteration": {
          "type": "integer",
          "minimum": -1,
          "description": "Highest iteration reported (-1 before the first report)."
        },
        "iterationMs": {
          "$ref": "#/definitions/ms",
          "description": "Recent iteration time measured by the ranks."
        },
        "scheduleVersion": {
          "type": [
            "integer",
            "null"
          ],
          "minimum": 1,
          "description": "Committed schedule version in force; null before the first."
        },
        "handshake": {
          "type": [
            "object",
            "null"
          ],
          "additionalProperties": false,
          "required": [
            "version",
            "effectiveIteration",
            "acked",
            "of"
          ],
          "description": "The switch being prepared, or null.",
          "properties": {
            "version": {
              "type": "integer",
              "minimum": 1
            },
            "effectiveIteration": {
              "type": "integer",
              "minimum": 0
            },
            "acked": {
              "$ref": "#/definitions/count"
            },
            "of": {
              "$ref": "#/definitions/count",
              "description": "Reporting ranks that must acknowledge."
            }
          }
        },
        "stragglers": {
          "$ref": "#/definitions/count",
          "description": "Straggling links and ranks now."
        },
        "delegatedRanks": {
          "$ref": "#/definitions/count"
        },
        "staleRanks": {
          "type": "array",
          "items": {
            "$ref": "#/definitions/rank"
          },
          "description": "Reporting ranks silent for ingest.stallTimeoutMs."
        },
        "topology": {
          "type": "object",
          "additionalProperties": false,
          "required": [
            "version",
            "sinceVersion",
            "pendingVersion",
            "staleLayoutReports"
          ],
          "properties": {
            "version": {
              "type": "integer",
              "minimum": 0,
              "description": "0: the registration's layout."
            },
            "sinceVersion": {
              "type": [
                "integer",
                "null"
              ]
            },
            "pendingVersion": {
              "type": [
                "integer",
                "null"
              ]
            },
            "staleLayoutReports": {
              "$ref": "#/definitions/count"
            }
          }
        }
      }
    },
    "pipelineLink": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "dp",
        "link",
        "upRank",
        "downRank",
        "forwardExtraMs",
        "backwardExtraMs",
        "extraMs",
        "baselineMs",
        "medianMs",
        "ewmaMs",
        "samples",
        "straggler",
        "reason",
        "error"
      ],
      "description": "One pipeline link (stage `link` to `link + 1`) of replica `dp`, both directions.",
      "properties": {
        "dp": {
          "type": "integer",
          "minimum": 0
        },
        "link": {
          "type": "integer",
          "minimum": 0
        },
        "upRank": {
          "$ref": "#/definitions/rank"
        },
        "downRank": {
          "$ref": "#/definitions/rank"
        },
        "forwardExtraMs": {
          "$ref": "#/definitions/ms"
        },
        "backwardExtraMs": {
          "$ref": "#/definitions/ms"
        },
        "extraMs": {
          "$ref": "#/definitions/ms",
          "description": "Extra delay over the learned baseline, the slower direction."
        },
        "baselineMs": {
          "$ref": "#/definitions/ms"
        },
        "medianMs": {
          "$ref": "#/definitions/ms"
        },
        "ewmaMs": {
          "$ref": "#/definitions/ms"
        },
        "samples": {
          "$ref": "#/definitions/count"
        },
        "straggler": {
          "type": "boolean"
        },
        "reason": {
          "enum": [
            "nic-failure",
            "eq1",
            "delegation",
            null
          ],
          "description": "Why it straggles: its NIC failed, its delay exceeds what the slackness absorbs (Eq. 1), or it needs CPU delegation."
        },
        "error": {
          "$ref": "#/definitions/linkError"
        }
      }
    },
    "dataParallelLink": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "fromRank",
        "toRank",
        "pp",
        "medianMs",
        "baselineMs",
        "extraMs",
        "peerMedianMs",
        "ratio",
        "samples",
        "straggler",
        "error"
      ],
      "properties": {
        "fromRank": {
          "$ref": "#/definitions/rank"
        },
        "toRank": {
          "$ref": "#/definitions/rank"
        },
        "pp": {
          "type": "integer",
          "minimum": 0
        },
        "medianMs": {
          "$ref": "#/definitions/ms"
        },
        "baselineMs": {
          "$ref": "#/definitions/ms"
        },
        "extraMs": {
          "$ref": "#/definitions/ms"
        },
        "peerMedianMs": {
          "$ref": "#/definitions/ms",
          "description": "Median of the stage's other ring links."
        },
        "ratio": {
          "$ref": "#/definitions/ms",
          "description": "medianMs / peerMedianMs (dimensionless)."
        },
        "samples": {
          "$ref": "#/definitions/count"
        },
        "straggler": {
          "type": "boolean"
        },
        "error": {
          "$ref": "#/definitions/linkError"
        }
      }
    },
    "computeRank": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "rank",
        "dp",
        "pp",
        "fMs",
        "bMs",
        "wMs",
        "referenceMs",
        "ratio",
        "straggler"
      ],
      "properties": {
        "rank": {
          "$ref": "#/definitions/rank"
        },
        "dp": {
          "type": "integer",
          "minimum": 0
        },
        "pp": {
          "type": "integer",
          "minimum": 0
        },
        "fMs": {
          "$ref": "#/definitions/ms"
        },
        "bMs": {
          "$ref": "#/definitions/ms"
        },
        "wMs": {
          "$ref": "#/definitions/ms"
        },
        "referenceMs": {
          "$ref": "#/definitions/ms",
          "description": "f + b + w of the stage's data-parallel peers."
        },
        "ratio": {
          "$ref": "#/definitions/ms"
        },
        "straggler": {
          "type": "boolean"
        }
      }
    },
    "perStage": {
      "type": "array",
      "items": {
        "$ref": "#/definitions/ms"
      }
    },
    "jobDetail": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "jobId",
        "stages",
        "microbatches",
        "dp",
        "tp",
        "epoch",
        "iteration",
        "iterationMs",
        "scheduleVersion",
        "handshake",
        "stragglers",
        "delegatedRanks",
        "staleRanks",
        "topology",
        "counters",
        "links",
        "stageTimes",
        "schedule"
      ],
      "description": "Everything in jobSummary except `stragglers`, which here lists the straggling links and ranks instead of counting them; plus the detector's view and the schedule in force.",
      "properties": {
        "jobId": {
          "$ref": "#/definitions/jobSummary/properties/jobId"
        },
        "stages": {
          "$ref": "#/definitions/jobSummary/properties/stages"
        },
        "microbatches": {
          "$ref": "#/definitions/jobSummary/properties/microbatches"
        },
        "dp": {
          "$ref": "#/definitions/jobSummary/properties/dp"
        },
        "tp": {
          "$ref": "#/definitions/jobSummary/properties/tp"
        },
        "epoch": {
          "$ref": "#/definitions/jobSummary/properties/epoch"
        },
        "iteration": {
          "$ref": "#/definitions/jobSummary/properties/iteration"
        },
        "iterationMs": {
          "$ref": "#/definitions/jobSummary/properties/iterationMs"
        },
        "scheduleVersion": {
          "$ref": "#/definitions/jobSummary/properties/scheduleVersion"
        },
        "handshake": {
          "$ref": "#/definitions/jobSummary/properties/handshake"
        },
        "stragglers": {
          "type": "object",
          "additionalProperties": false,
          "required": [
            "pipeline",
            "dataParallel",
            "compute"
          ],
          "description": "The entries of `links` (and compute ranks) that straggle now.",
          "properties": {
            "pipeline": {
              "type": "array",
              "items": {
                "$ref": "#/definitions/pipelineLink"
              }
            },
            "dataParallel": {
              "type": "array",
              "items": {
                "$ref": "#/definitions/dataParallelLink"
              }
            },
            "compute": {
              "type": "array",
              "items": {
                "$ref": "#/definitions/computeRank"
              }
            }
          }
        },
        "delegatedRanks": {
          "$ref": "#/definitions/jobSummary/properties/delegatedRanks"
        },
        "staleRanks": {
          "$ref": "#/definitions/jobSummary/properties/staleRanks"
        },
        "topology": {
          "$ref": "#/definitions/jobSummary/properties/topology"
        },
        "counters": {
          "type": "object",
          "additionalProperties": false,
          "required": [
            "reports",
            "acks",
            "duplicates",
            "rejected",
            "prepares",
            "commits",
            "aborts"
          ],
          "description": "Since this replica took the job.",
          "properties": {
            "reports": {
              "$ref": "#/definitions/count"
            },
            "acks": {
              "$ref": "#/definitions/count"
            },
            "duplicates": {
              "$ref": "#/definitions/count"
            },
            "rejected": {
              "$ref": "#/definitions/count"
            },
            "prepares": {
              "$ref": "#/definitions/count"
            },
            "commits": {
              "$ref": "#/definitions/count"
            },
            "aborts": {
              "$ref": "#/definitions/count"
            }
          }
        },
        "links": {
          "type": "object",
          "additionalProperties": false,
          "required": [
            "pipeline",
            "dataParallel"
          ],
          "properties": {
            "pipeline": {
              "type": "array",
              "items": {
                "$ref": "#/definitions/pipelineLink"
              }
            },
            "dataParallel": {
              "type": "array",
              "items": {
                "$ref": "#/definitions/dataParallelLink"
              }
            }
          }
        },
        "stageTimes": {
          "type": "object",
          "additionalProperties": false,
          "required": [
            "fMs",
            "bMs",
            "wMs"
          ],
          "description": "Per stage op times the daemon plans with (measured, the slowest replica).",
          "properties": {
            "fMs": {
              "$ref": "#/definitions/perStage"
            },
            "bMs": {
              "$ref": "#/definitions/perStage"
            },
            "wMs": {
              "$ref": "#/definitions/perStage"
            }
          }
        },
        "schedule": {
          "type": [
            "object",
            "null"
          ],
          "additionalProperties": false,
          "required": [
            "version",
            "effectiveIteration",
            "warmups",
            "delegation",
            "reason",
            "prediction"
          ],
          "description": "Summary of the committed schedule in force (the whole one: GET /jobs/:id/schedule); null before the first.",
          "properties": {
            "version": {
              "type": "integer",
              "minimum": 1
            },
            "effectiveIteration": {
              "type": "integer",
              "minimum": 0
            },
            "warmups": {
              "type": "array",
              "items": {
                "type": "object",
                "additionalProperties": false,
                "required": [
                  "dpReplicas",
                  "warmup"
                ],
                "properties": {
                  "dpReplicas": {
                    "type": "array",
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
                    "description": "Warm-up count per stage."
                  }
                }
              }
            },
            "delegation": {
              "$ref": "https://pipemorph.dev/schemas/schedule.v1.schema.json#/properties/delegation"
            },
            "reason": {
              "$ref": "https://pipemorph.dev/schemas/schedule.v1.schema.json#/properties/reason"
            },
            "prediction": {
              "$ref": "https://pipemorph.dev/schemas/schedule.v1.schema.json#/properties/prediction"
            }
          }
        }
      }
    }
  }
} as const;
