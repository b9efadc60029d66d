// Generated from schemas/jobs-api.v1.schema.json by test/schema-types.test.ts; do not edit (PIPEMORPH_WRITE_SCHEMAS=1 regenerates it).
export const jobsApiV1Schema = {
  "$schema": "http://json-schema.org/draft-07/schema#",
  "$id": "https://pipemorph.dev/schemas/jobs-api.v1.schema.json",
  "title": "Daemon HTTP API: GET /jobs, GET /jobs/:id and GET /jobs/:id/decisions",
  "description": "Read-only views of the jobs one daemon replica owns (docs/operations.md, 'The jobs API'). Numbers the daemon does not know yet (NaN inside the daemon) are null. `GET /jobs` answers a jobList, `GET /jobs/:id` a jobDetail, `GET /jobs/:id/decisions` a decisionLog (404 when another replica owns the job, 400 for a malformed id), `GET /jobs/:id/overrides` an overridesView (any replica; 404 for a job not registered). Reason, prediction and delegation entries have the shapes of the published schedule (schedule.v1.schema.json).",
  "oneOf": [
    {
      "$ref": "#/definitions/jobList"
    },
    {
      "$ref": "#/definitions/jobDetail"
    },
    {
      "$ref": "#/definitions/decisionLog"
    },
    {
      "$ref": "#/definitions/overridesView"
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
        "topology",
        "overrides"
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
        },
        "overrides": {
          "oneOf": [
            {
              "type": "null"
            },
            {
              "type": "object",
              "additionalProperties": false,
              "required": [
                "version",
                "setBy",
                "reason",
                "pauseDetection",
                "pauseSwitching"
              ],
              "properties": {
                "version": {
                  "type": "integer",
                  "minimum": 1
                },
                "setBy": {
                  "type": "string"
                },
                "reason": {
                  "type": "string"
                },
                "pauseDetection": {
                  "type": "boolean"
                },
                "pauseSwitching": {
                  "type": "boolean"
                }
              }
            }
          ],
          "description": "The per-job overrides in force on this replica (GET /jobs/:id/overrides has them in full), null when none: a job with detection or switching paused shows here."
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
        "recovering",
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
        "recovering": {
          "type": "boolean",
          "description": "A straggler whose newest samples are healthy again, held by hysteresis (detection.leaveAfter) until it recovers."
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
        "recovering",
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
        "recovering": {
          "type": "boolean",
          "description": "A straggler whose newest samples are healthy again, held by hysteresis (detection.leaveAfter) until it recovers."
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
        "straggler",
        "recovering"
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
        },
        "recovering": {
          "type": "boolean",
          "description": "A straggler whose newest samples are healthy again, held by hysteresis (detection.leaveAfter) until it recovers."
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
        "detection",
        "schedule",
        "overrides"
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
        "detection": {
          "type": "object",
          "additionalProperties": false,
          "required": [
            "tailRate",
            "severeEnterAfter"
          ],
          "description": "What the detector learned of the job's noise: severe samples per sample on its healthy pipeline links, and the severe samples in a row that make a pipeline straggler because of it (detection.severeEnterAfter, raised while a run that long is more likely by chance than detection.severeChanceRate).",
          "properties": {
            "tailRate": {
              "type": "number",
              "minimum": 0,
              "maximum": 1
            },
            "severeEnterAfter": {
              "type": "integer",
              "minimum": 1
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
        },
        "overrides": {
          "$ref": "#/definitions/jobSummary/properties/overrides"
        }
      }
    },
    "decisionLog": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "jobId",
        "total",
        "decisions",
        "overrideChanges"
      ],
      "description": "The newest control decisions of a job on the answering replica (at most 256 entries, oldest first): taken, declined by the cost gate (control.costAware) or paused, each with what it saw, predicted and would cost. A run of the same decision (same kind, verdict and stragglers, not taken) is one entry with `repeats`. `overrideChanges`: the job's per-job overrides as this replica applied, cleared or refused them (who, what, when).",
      "properties": {
        "jobId": {
          "type": "string"
        },
        "total": {
          "$ref": "#/definitions/count",
          "description": "Decisions judged since this replica took the job (repeats and entries no longer kept included)."
        },
        "decisions": {
          "type": "array",
          "items": {
            "$ref": "#/definitions/decision"
          }
        },
        "overrideChanges": {
          "type": "array",
          "maxItems": 32,
          "items": {
            "$ref": "#/definitions/overridesChange"
          },
          "description": "The newest 32 changes of the job's per-job overrides on this replica, oldest first (decision records made while overrides were in force say `overrides: true`)."
        }
      }
    },
    "decision": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "at",
        "iteration",
        "kind",
        "verdict",
        "reason",
        "evidence",
        "prediction",
        "cost",
        "scheduleVersion",
        "overrides",
        "repeats",
        "firstIteration"
      ],
      "properties": {
        "at": {
          "type": "number",
          "description": "Daemon clock when decided, ms since the epoch."
        },
        "iteration": {
          "type": "integer",
          "minimum": -1,
          "description": "The job's newest iteration when decided (-1 before any report)."
        },
        "firstIteration": {
          "type": "integer",
          "minimum": -1,
          "description": "Iteration of the first decision of a run of repeats (= iteration when repeats is 1)."
        },
        "repeats": {
          "type": "integer",
          "minimum": 1,
          "description": "Steps in a row that made this same decision with this verdict."
        },
        "kind": {
          "enum": [
            "initial",
            "straggler",
            "recovery",
            "nic-failure",
            "remap",
            "rebalance"
          ]
        },
        "rebalance": {
          "type": "object",
          "additionalProperties": false,
          "required": [
            "slowRanks",
            "speed",
            "currentSplit",
            "split",
            "moveBytes",
            "moveMs",
            "expectedIterations",
            "replanMs",
            "newMs",
            "exact"
          ],
          "description": "Kind rebalance only (docs/rebalancing.md): the compute stragglers, the per-stage speeds priced, the split in force and the one chosen (null: none better or none fits), the handoff, and the predicted iteration times of re-planning alone and of the new split.",
          "properties": {
            "slowRanks": {
              "type": "array",
              "items": {
                "type": "object",
                "additionalProperties": false,
                "required": [
                  "rank",
                  "pp",
                  "ratio"
                ],
                "properties": {
                  "rank": {
                    "$ref": "#/definitions/count"
                  },
                  "pp": {
                    "$ref": "#/definitions/count"
                  },
                  "ratio": {
                    "type": [
                      "number",
                      "null"
                    ]
                  }
                }
              }
            },
            "speed": {
              "type": "array",
              "items": {
                "type": "number"
              }
            },
            "currentSplit": {
              "type": "array",
              "items": {
                "type": "integer",
                "minimum": 1
              }
            },
            "split": {
              "type": [
                "array",
                "null"
              ],
              "items": {
                "type": "integer",
                "minimum": 1
              }
            },
            "moveBytes": {
              "type": "number",
              "minimum": 0
            },
            "moveMs": {
              "type": "number",
              "minimum": 0
            },
            "expectedIterations": {
              "type": [
                "number",
                "null"
              ],
              "description": "The straggler's expected remaining iterations (null: unbounded)."
            },
            "replanMs": {
              "type": "number"
            },
            "newMs": {
              "type": [
                "number",
                "null"
              ]
            },
            "exact": {
              "type": "boolean",
              "description": "Whether the split search proved its split optimal for its estimate."
            }
          }
        },
        "verdict": {
          "enum": [
            "taken",
            "declined",
            "paused"
          ],
          "description": "taken: published; declined: its gain over the straggler's expected duration does not beat its cost; paused: switching paused for the job."
        },
        "reason": {
          "type": "string",
          "description": "One sentence: why taken or declined, with the numbers."
        },
        "evidence": {
          "type": "object",
          "additionalProperties": false,
          "required": [
            "links",
            "dataParallelLinks"
          ],
          "properties": {
            "links": {
              "type": "array",
              "items": {
                "type": "object",
                "additionalProperties": false,
                "required": [
                  "dp",
                  "link",
                  "extraMs",
                  "nicFailure"
                ],
                "properties": {
                  "dp": {
                    "$ref": "#/definitions/count"
                  },
                  "link": {
                    "$ref": "#/definitions/count"
                  },
                  "extraMs": {
                    "type": "number"
                  },
                  "nicFailure": {
                    "type": "boolean"
                  }
                }
              }
            },
            "dataParallelLinks": {
              "type": "array",
              "items": {
                "type": "object",
                "additionalProperties": false,
                "required": [
                  "fromRank",
                  "toRank",
                  "extraMs"
                ],
                "properties": {
                  "fromRank": {
                    "$ref": "#/definitions/rank"
                  },
                  "toRank": {
                    "$ref": "#/definitions/rank"
                  },
                  "extraMs": {
                    "type": "number"
                  }
                }
              }
            }
          }
        },
        "prediction": {
          "type": "object",
          "additionalProperties": false,
          "required": [
            "currentMs",
            "newMs",
            "staticMs"
          ],
          "description": "Predicted iteration times (all-reduce included), ms: what runs now, the decided plan, the initial plan, under the delays measured now.",
          "properties": {
            "currentMs": {
              "$ref": "#/definitions/ms"
            },
            "newMs": {
              "$ref": "#/definitions/ms"
            },
            "staticMs": {
              "$ref": "#/definitions/ms"
            }
          }
        },
        "cost": {
          "oneOf": [
            {
              "type": "null"
            },
            {
              "type": "object",
              "additionalProperties": false,
              "required": [
                "gainMsPerIteration",
                "expectedIterations",
                "leadIterations",
                "uncertainty",
                "benefitMs",
                "costMs"
              ],
              "description": "The cost gate's arithmetic: benefitMs = (gainMsPerIteration x (1 - uncertainty) + resourceMsPerIteration) x (expectedIterations - leadIterations), taken when above costMs. Null for first plans, NIC failures, recoveries taken by control.recoveryWithinIterations and with control.costAware off.",
              "properties": {
                "gainMsPerIteration": {
                  "type": "number"
                },
                "resourceMsPerIteration": {
                  "type": "number",
                  "description": "Resources the switch gives back per iteration, ms (control.delegatedRankMsPerIteration per delegated rank, control.warmupMsPerIteration per warm-up forward, of the plan in force minus the new plan's; negative when it takes more)."
                },
                "expectedIterations": {
                  "type": [
                    "number",
                    "null"
                  ],
                  "description": "Iterations the straggler (for a recovery: the healthy spell) is expected to last; null for 'for good' (nothing ever straggled)."
                },
                "leadIterations": {
                  "$ref": "#/definitions/count"
                },
                "uncertainty": {
                  "type": "number"
                },
                "benefitMs": {
                  "type": [
                    "number",
                    "null"
                  ],
                  "description": "null: unbounded (an expected duration 'for good')."
                },
                "costMs": {
                  "type": "number"
                }
              }
            }
          ]
        },
        "scheduleVersion": {
          "type": [
            "integer",
            "null"
          ],
          "description": "The version a taken decision was published as."
        },
        "overrides": {
          "type": "boolean",
          "description": "Per-job detection overrides were in force."
        }
      }
    },
    "overridesChange": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "at",
        "action",
        "seen",
        "version",
        "setBy",
        "reason",
        "setAt",
        "overrides",
        "problems"
      ],
      "description": "One change of a job's per-job overrides as its leading replica handled it.",
      "properties": {
        "at": {
          "type": "number",
          "description": "Daemon clock when this replica applied, cleared or refused it, ms since the epoch."
        },
        "action": {
          "enum": [
            "applied",
            "cleared",
            "rejected"
          ],
          "description": "applied: in force from now; cleared: the key was deleted, the configuration applies again; rejected: refused (problems), what was in force stays."
        },
        "seen": {
          "enum": [
            "api",
            "poll",
            "adoption"
          ],
          "description": "How this replica came to it: written through its own API, read at a discovery, or read when it took the job."
        },
        "version": {
          "type": [
            "integer",
            "null"
          ]
        },
        "setBy": {
          "type": [
            "string",
            "null"
          ],
          "description": "Who, as the document says (for a delete through the API: its setBy query parameter, if given)."
        },
        "reason": {
          "type": [
            "string",
            "null"
          ]
        },
        "setAt": {
          "type": [
            "number",
            "null"
          ],
          "description": "When the writer says it was written."
        },
        "overrides": {
          "oneOf": [
            {
              "type": "null"
            },
            {
              "$ref": "https://pipemorph.dev/schemas/job-overrides.v1.schema.json"
            }
          ],
          "description": "The document applied (null when cleared or rejected)."
        },
        "problems": {
          "type": "array",
          "items": {
            "type": "string"
          },
          "description": "Why a rejected document was refused."
        }
      }
    },
    "overridesView": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "jobId",
        "replica",
        "leading",
        "stored",
        "storedProblems",
        "inForce",
        "effective",
        "changes"
      ],
      "description": "GET /jobs/:id/overrides: the job's overrides key, validated now (any replica), and on the leading replica what it has in force and the knobs the job runs with.",
      "properties": {
        "jobId": {
          "type": "string"
        },
        "replica": {
          "type": "string",
          "description": "The answering replica."
        },
        "leading": {
          "type": "boolean",
          "description": "Whether the answering replica leads the job; inForce, effective and changes are null or empty elsewhere."
        },
        "stored": {
          "oneOf": [
            {
              "type": "null"
            },
            {
              "$ref": "https://pipemorph.dev/schemas/job-overrides.v1.schema.json"
            }
          ],
          "description": "The key's document when it is valid (null: absent or refused)."
        },
        "storedProblems": {
          "type": "array",
          "items": {
            "type": "string"
          },
          "description": "Why the key's content is refused (empty when valid or absent)."
        },
        "inForce": {
          "oneOf": [
            {
              "type": "null"
            },
            {
              "$ref": "https://pipemorph.dev/schemas/job-overrides.v1.schema.json"
            }
          ],
          "description": "The document the leader applies (it follows the key within jobs.discoveryIntervalMs, and keeps the last valid one while the key is refused)."
        },
        "effective": {
          "oneOf": [
            {
              "type": "null"
            },
            {
              "type": "object",
              "additionalProperties": false,
              "required": [
                "detection",
                "switchCost",
                "minGain",
                "pauseDetection",
                "pauseSwitching"
              ],
              "description": "The knobs the job runs with: the configuration with the overrides on top.",
              "properties": {
                "detection": {
                  "type": "object",
                  "additionalProperties": false,
                  "required": [
                    "windowSize",
                    "ewmaAlpha",
                    "baselineWarmup",
                    "enterAfter",
                    "leaveAfter",
                    "severeExtraMs",
                    "severeEnterAfter",
                    "severeChanceRate",
                    "minExtraMs",
                    "delegationThresholdMs",
                    "dpSlowRatio",
                    "dpMinExtraMs",
                    "computeSlowRatio"
                  ],
                  "properties": {
                    "windowSize": {
                      "type": "number"
                    },
                    "ewmaAlpha": {
                      "type": "number"
                    },
                    "baselineWarmup": {
                      "type": "number"
                    },
                    "enterAfter": {
                      "type": "number"
                    },
                    "leaveAfter": {
                      "type": "number"
                    },
                    "severeExtraMs": {
                      "type": "number"
                    },
                    "severeEnterAfter": {
                      "type": "number"
                    },
                    "severeChanceRate": {
                      "type": "number"
                    },
                    "minExtraMs": {
                      "type": "number"
                    },
                    "delegationThresholdMs": {
                      "type": "number"
                    },
                    "dpSlowRatio": {
                      "type": "number"
                    },
                    "dpMinExtraMs": {
                      "type": "number"
                    },
                    "computeSlowRatio": {
                      "type": "number"
                    }
                  }
                },
                "switchCost": {
                  "type": "object",
                  "additionalProperties": false,
                  "required": [
                    "costAware",
                    "switchCostMs",
                    "predictionUncertainty",
                    "stragglerPriorIterations",
                    "stragglerPriorWeight"
                  ],
                  "properties": {
                    "costAware": {
                      "type": "boolean"
                    },
                    "switchCostMs": {
                      "type": "number"
                    },
                    "predictionUncertainty": {
                      "type": "number"
                    },
                    "stragglerPriorIterations": {
                      "type": "number"
                    },
                    "stragglerPriorWeight": {
                      "type": "number"
                    },
                    "delegatedRankMsPerIteration": {
                      "type": "number"
                    },
                    "warmupMsPerIteration": {
                      "type": "number"
                    },
                    "recoveryWithinIterations": {
                      "type": "number"
                    }
                  }
                },
                "minGain": {
                  "type": "number"
                },
                "pauseDetection": {
                  "type": "boolean"
                },
                "pauseSwitching": {
                  "type": "boolean"
                }
              }
            }
          ]
        },
        "changes": {
          "type": "array",
          "maxItems": 32,
          "items": {
            "$ref": "#/definitions/overridesChange"
          }
        }
      }
    }
  }
} as const;
