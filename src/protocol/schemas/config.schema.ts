// Generated from schemas/config.schema.json by test/schema-types.test.ts; do not edit (PIPEMORPH_WRITE_SCHEMAS=1 regenerates it).
export const configSchema = {
  "$schema": "http://json-schema.org/draft-07/schema#",
  "$id": "https://pipemorph.dev/schemas/config.schema.json",
  "title": "pipemorph daemon configuration",
  "description": "config/default.json documents every key and its default; see docs/operations.md for the meaning of each.",
  "type": "object",
  "additionalProperties": false,
  "required": [
    "redis",
    "http",
    "ingest",
    "detection",
    "control",
    "remap",
    "rebalance",
    "handshake",
    "jobs",
    "fleet"
  ],
  "properties": {
    "redis": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "url",
        "tls"
      ],
      "properties": {
        "url": {
          "type": "string",
          "pattern": "^rediss?://"
        },
        "tls": {
          "type": "object",
          "additionalProperties": false,
          "required": [
            "caFile",
            "certFile",
            "keyFile"
          ],
          "properties": {
            "caFile": {
              "type": "string"
            },
            "certFile": {
              "type": "string"
            },
            "keyFile": {
              "type": "string"
            }
          }
        },
        "cluster": {
          "type": "object",
          "additionalProperties": false,
          "required": [
            "nodes"
          ],
          "description": "Redis Cluster seed nodes (host:port); when any is given, redis.url is used for its scheme and credentials only.",
          "properties": {
            "nodes": {
              "type": "array",
              "maxItems": 64,
              "items": {
                "type": "string",
                "pattern": "^[^\\s:/]+:[0-9]{1,5}$"
              }
            }
          }
        },
        "sentinels": {
          "type": "array",
          "maxItems": 16,
          "items": {
            "type": "string",
            "pattern": "^[^\\s:/]+:[0-9]{1,5}$"
          },
          "description": "Redis Sentinel nodes (host:port) that name the master of redis.sentinelName."
        },
        "sentinelName": {
          "type": "string",
          "maxLength": 256
        }
      }
    },
    "http": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "host",
        "port"
      ],
      "properties": {
        "host": {
          "type": "string",
          "minLength": 1
        },
        "port": {
          "type": "integer",
          "minimum": 0,
          "maximum": 65535
        },
        "operatorToken": {
          "type": "string",
          "pattern": "^$|^[\\x21-\\x7E]{16,4096}$",
          "description": "Bearer token of the operator API (PUT and DELETE /jobs/:id/overrides); empty: those endpoints are off (403). At least 16 printable ASCII characters without spaces. Give it through the environment (PIPEMORPH_OPERATOR_TOKEN, from a Secret), not in a file."
        }
      }
    },
    "ingest": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "consumerGroup",
        "batchSize",
        "blockMs",
        "claimIdleMs",
        "streamMaxLen",
        "rejectedMaxLen",
        "rejectedCopyBytes",
        "registrationsMaxLen",
        "controlMaxLen",
        "historyIterations",
        "maxIterationJump",
        "stallTimeoutMs"
      ],
      "properties": {
        "consumerGroup": {
          "type": "string",
          "pattern": "^[A-Za-z0-9._-]{1,64}$"
        },
        "batchSize": {
          "type": "integer",
          "minimum": 1,
          "maximum": 100000
        },
        "blockMs": {
          "type": "integer",
          "minimum": 1,
          "maximum": 60000
        },
        "claimIdleMs": {
          "type": "integer",
          "minimum": 100,
          "maximum": 3600000
        },
        "streamMaxLen": {
          "type": "integer",
          "minimum": 100,
          "maximum": 100000000
        },
        "rejectedMaxLen": {
          "type": "integer",
          "minimum": 10,
          "maximum": 10000000
        },
        "rejectedCopyBytes": {
          "type": "integer",
          "minimum": 64,
          "maximum": 1048576
        },
        "registrationsMaxLen": {
          "type": "integer",
          "minimum": 100,
          "maximum": 10000000
        },
        "controlMaxLen": {
          "type": "integer",
          "minimum": 10,
          "maximum": 10000000
        },
        "historyIterations": {
          "type": "integer",
          "minimum": 0,
          "maximum": 100000
        },
        "maxIterationJump": {
          "type": "integer",
          "minimum": 1,
          "maximum": 1000000000
        },
        "stallTimeoutMs": {
          "type": "integer",
          "minimum": 1000,
          "maximum": 3600000
        }
      }
    },
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
          "type": "integer",
          "minimum": 3,
          "maximum": 1024
        },
        "ewmaAlpha": {
          "type": "number",
          "exclusiveMinimum": 0,
          "maximum": 1
        },
        "baselineWarmup": {
          "type": "integer",
          "minimum": 1,
          "maximum": 1024
        },
        "enterAfter": {
          "type": "integer",
          "minimum": 1,
          "maximum": 1000
        },
        "leaveAfter": {
          "type": "integer",
          "minimum": 1,
          "maximum": 1000
        },
        "severeExtraMs": {
          "type": "number",
          "exclusiveMinimum": 0
        },
        "severeEnterAfter": {
          "type": "integer",
          "minimum": 1,
          "maximum": 1000
        },
        "severeChanceRate": {
          "type": "number",
          "exclusiveMinimum": 0,
          "maximum": 1
        },
        "minExtraMs": {
          "type": "number",
          "minimum": 0
        },
        "delegationThresholdMs": {
          "type": "number",
          "minimum": 0
        },
        "dpSlowRatio": {
          "type": "number",
          "exclusiveMinimum": 1
        },
        "dpMinExtraMs": {
          "type": "number",
          "minimum": 0
        },
        "computeSlowRatio": {
          "type": "number",
          "exclusiveMinimum": 1
        }
      }
    },
    "control": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "planner",
        "refinePlanner",
        "searchBudgetMs",
        "searchEvaluations",
        "minGain",
        "maxDelegateQueues",
        "minReplanIntervalMs",
        "maxPlanCells",
        "gpuSendsInFlight",
        "delegateCopyOverhead",
        "hostMemory",
        "planningWorkers",
        "planningWorkerNice",
        "warmUpRounds",
        "inlinePlanMaxCells",
        "planTimeoutMs",
        "optimalMaxCells",
        "optimalTimeLimitMs",
        "costAware",
        "switchCostMs",
        "predictionUncertainty",
        "stragglerPriorIterations",
        "stragglerPriorWeight",
        "delegatedRankMsPerIteration",
        "warmupMsPerIteration",
        "recoveryWithinIterations"
      ],
      "properties": {
        "planner": {
          "enum": [
            "adaptive",
            "search",
            "optimal"
          ]
        },
        "refinePlanner": {
          "enum": [
            "none",
            "search",
            "optimal"
          ],
          "description": "Second phase: once the schedule planned by `planner` is in force and stragglers last, the job is planned again with this policy (on the planning worker) and switched again when it gains at least minGain. `optimal` solves jobs within optimalMaxCells exactly and searches above."
        },
        "searchBudgetMs": {
          "type": "number",
          "minimum": 1,
          "maximum": 10000
        },
        "searchEvaluations": {
          "type": "integer",
          "minimum": 1,
          "maximum": 100000
        },
        "minGain": {
          "type": "number",
          "minimum": 0,
          "maximum": 1
        },
        "costAware": {
          "type": "boolean",
          "description": "Take a switch or re-map only when its predicted gain, over the straggler's expected remaining duration (learned from the job's own history) after the switch's lead, beats its cost (switchCostMs, twice; plus the re-map handoff). false: every plan gaining minGain is taken."
        },
        "switchCostMs": {
          "type": "number",
          "minimum": 0,
          "maximum": 3600000,
          "description": "What one schedule switch costs the job in iteration time, ms (handshake, op lists rebuilt, CPU delegates started or stopped); a switch for a straggler is paid again on the way back."
        },
        "predictionUncertainty": {
          "type": "number",
          "minimum": 0,
          "exclusiveMaximum": 1,
          "description": "Fraction of a predicted gain not counted on when weighing it against a switch's cost."
        },
        "stragglerPriorIterations": {
          "type": "number",
          "exclusiveMinimum": 0,
          "maximum": 100000000,
          "description": "Expected length of a straggler with no history in the job, iterations."
        },
        "stragglerPriorWeight": {
          "type": "number",
          "exclusiveMinimum": 0,
          "maximum": 1000,
          "description": "Weight of stragglerPriorIterations against one observed straggler episode (0.25: a quarter of one)."
        },
        "delegatedRankMsPerIteration": {
          "type": "number",
          "minimum": 0,
          "maximum": 1000000,
          "description": "What a rank running CPU delegates costs per iteration, ms of iteration time (the CPU cores and pinned host memory its delegates hold): priced in the cost gate with iteration time, so a healed job gives delegation back and a plan that adds delegates must gain more. 0: delegation is free."
        },
        "warmupMsPerIteration": {
          "type": "number",
          "minimum": 0,
          "maximum": 1000000,
          "description": "What one warm-up forward held costs per iteration, ms (a microbatch of activations on one stage of one replica): priced in the cost gate, so a healed job returns to the memory-lean initial warm-ups. 0: activation memory is free."
        },
        "recoveryWithinIterations": {
          "type": "integer",
          "minimum": 1,
          "maximum": 1000000,
          "description": "Iterations the stragglers a plan was made for must be healthy before the return to the initial plan (delegation off, initial warm-ups) is taken whatever the cost gate says: the bound on how long a healed job holds resources."
        },
        "maxDelegateQueues": {
          "type": "integer",
          "minimum": 1,
          "maximum": 64
        },
        "minReplanIntervalMs": {
          "type": "integer",
          "minimum": 0,
          "maximum": 3600000
        },
        "maxPlanCells": {
          "type": "integer",
          "minimum": 1,
          "maximum": 4194304
        },
        "gpuSendsInFlight": {
          "type": "integer",
          "minimum": 1,
          "maximum": 64
        },
        "delegateCopyOverhead": {
          "type": "number",
          "minimum": 0,
          "maximum": 1
        },
        "hostMemory": {
          "type": "boolean"
        },
        "planningWorkers": {
          "type": "integer",
          "minimum": 0,
          "maximum": 64
        },
        "planningWorkerNice": {
          "type": "integer",
          "minimum": 0,
          "maximum": 19,
          "description": "Niceness the planning worker threads add to the event loop's (Linux, per thread, at most 19; 0: the same), so a long plan yields the CPU to ingest, leases and handshakes."
        },
        "warmUpRounds": {
          "type": "integer",
          "minimum": 0,
          "maximum": 1000,
          "description": "Synthetic reactions (a straggling link planned around, then its recovery) the daemon decides on its event loop and on each planning worker before it reports ready, so that its first real decisions run optimised code (0: none)."
        },
        "inlinePlanMaxCells": {
          "type": "integer",
          "minimum": 0,
          "maximum": 1048576,
          "description": "Alg. 2 decisions (control.planner adaptive) for jobs of at most this many stages x microbatches (and 16 times this many over all replicas) are made on the event loop, not a planning worker (0: never)."
        },
        "planTimeoutMs": {
          "type": "integer",
          "minimum": 100,
          "maximum": 600000
        },
        "optimalMaxCells": {
          "type": "integer",
          "minimum": 0,
          "maximum": 4096
        },
        "optimalTimeLimitMs": {
          "type": "integer",
          "minimum": 1,
          "maximum": 60000
        }
      }
    },
    "remap": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "enabled",
        "minGain",
        "migrationMsPerNode",
        "amortizeIterations",
        "searchBudgetMs",
        "minIntervalMs",
        "extraLeadIterations"
      ],
      "properties": {
        "enabled": {
          "type": "boolean"
        },
        "minGain": {
          "type": "number",
          "minimum": 0,
          "exclusiveMaximum": 1
        },
        "migrationMsPerNode": {
          "type": "number",
          "minimum": 0
        },
        "amortizeIterations": {
          "type": "integer",
          "minimum": 1,
          "maximum": 100000000
        },
        "searchBudgetMs": {
          "type": "integer",
          "minimum": 1,
          "maximum": 60000
        },
        "minIntervalMs": {
          "type": "integer",
          "minimum": 0,
          "maximum": 86400000
        },
        "extraLeadIterations": {
          "type": "integer",
          "minimum": 0,
          "maximum": 1000
        }
      }
    },
    "rebalance": {
      "type": "object",
      "additionalProperties": false,
      "description": "Moving layers away from a slow rank, for jobs whose registration declares `layers` (docs/rebalancing.md). A config file without this section gets the defaults.",
      "required": [
        "enabled",
        "minGain",
        "handoffGBps",
        "maxCandidates",
        "refineCandidates",
        "extraLeadIterations"
      ],
      "properties": {
        "enabled": {
          "type": "boolean"
        },
        "minGain": {
          "type": "number",
          "minimum": 0,
          "exclusiveMaximum": 1,
          "description": "re-balance only when the new split's predicted iteration time plus the handoff amortised over the straggler's expected remaining iterations beats re-planning alone by this fraction"
        },
        "handoffGBps": {
          "type": "number",
          "exclusiveMinimum": 0,
          "maximum": 10000,
          "description": "how fast a moved layer's weights and optimizer state reach its new stage, GB/s"
        },
        "maxCandidates": {
          "type": "integer",
          "minimum": 1,
          "maximum": 100000,
          "description": "bottleneck values the split search tries before it gives up exactness"
        },
        "refineCandidates": {
          "type": "integer",
          "minimum": 1,
          "maximum": 64,
          "description": "best splits priced with the planner and the simulator"
        },
        "extraLeadIterations": {
          "type": "integer",
          "minimum": 0,
          "maximum": 1000,
          "description": "extra iterations of notice for a re-balance, so ranks can fetch the layers they take on"
        }
      }
    },
    "handshake": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "prepareTimeoutMs",
        "minLeadIterations",
        "leadMs",
        "retryBackoffMs"
      ],
      "properties": {
        "prepareTimeoutMs": {
          "type": "integer",
          "minimum": 10,
          "maximum": 600000
        },
        "minLeadIterations": {
          "type": "integer",
          "minimum": 1,
          "maximum": 1000
        },
        "leadMs": {
          "type": "integer",
          "minimum": 0,
          "maximum": 600000
        },
        "retryBackoffMs": {
          "type": "integer",
          "minimum": 0,
          "maximum": 600000
        }
      }
    },
    "jobs": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "leaseMs",
        "discoveryIntervalMs",
        "staleRankMs",
        "staleJobMs",
        "maintenanceCron",
        "ownerId"
      ],
      "properties": {
        "leaseMs": {
          "type": "integer",
          "minimum": 100,
          "maximum": 600000
        },
        "discoveryIntervalMs": {
          "type": "integer",
          "minimum": 10,
          "maximum": 600000
        },
        "staleRankMs": {
          "type": "integer",
          "minimum": 100,
          "maximum": 86400000
        },
        "staleJobMs": {
          "type": "integer",
          "minimum": 100,
          "maximum": 604800000
        },
        "maintenanceCron": {
          "type": "string",
          "minLength": 9
        },
        "ownerId": {
          "type": "string",
          "pattern": "^[A-Za-z0-9._:-]{0,128}$"
        }
      }
    },
    "fleet": {
      "type": "object",
      "additionalProperties": false,
      "description": "The fleet view: evidence every replica records from the jobs it leads, and the suspects (NIC, uplink, boundary, node pair, GPU) localised from all of it (docs/fleet.md). A config file without this section gets the defaults.",
      "required": [
        "enabled",
        "prior",
        "intervalMs",
        "ttlMs",
        "maxJobs",
        "maxLinksPerJob",
        "minLinkSamples",
        "minSlowFraction",
        "nicMinPeers",
        "nicMinJobs",
        "peerHealthyFraction",
        "boundaryMinNodes",
        "boundaryMinJobs",
        "insideHealthyFraction",
        "uplinkMinBoundaries",
        "pairMinJobs",
        "computeMinJobs"
      ],
      "properties": {
        "enabled": {
          "type": "boolean"
        },
        "prior": {
          "type": "boolean",
          "description": "every led job's detector takes the view as a prior: a link through a suspect other jobs named is flagged on its first bad sample (docs/fleet.md)"
        },
        "intervalMs": {
          "type": "integer",
          "minimum": 100,
          "maximum": 600000,
          "description": "how often a replica records its jobs' evidence and recomputes the view"
        },
        "ttlMs": {
          "type": "integer",
          "minimum": 200,
          "maximum": 3600000,
          "description": "how long a job's evidence lives in Redis unless re-written"
        },
        "maxJobs": {
          "type": "integer",
          "minimum": 1,
          "maximum": 1000000,
          "description": "jobs' evidence read per view (by job id)"
        },
        "maxLinksPerJob": {
          "type": "integer",
          "minimum": 1,
          "maximum": 100000,
          "description": "node pairs recorded per job, the slow ones first"
        },
        "minLinkSamples": {
          "type": "integer",
          "minimum": 1,
          "maximum": 100000,
          "description": "a job's link with fewer samples is still learning and left out"
        },
        "minSlowFraction": {
          "type": "number",
          "exclusiveMinimum": 0,
          "maximum": 1,
          "description": "fraction of a suspect's links (or compute records) that must be slow"
        },
        "nicMinPeers": {
          "type": "integer",
          "minimum": 1,
          "maximum": 1000,
          "description": "NIC: distinct peers slow to the node and healthy elsewhere"
        },
        "nicMinJobs": {
          "type": "integer",
          "minimum": 1,
          "maximum": 1000,
          "description": "NIC: distinct jobs slow on the node"
        },
        "peerHealthyFraction": {
          "type": "number",
          "minimum": 0,
          "maximum": 1,
          "description": "a peer is healthy elsewhere when this fraction of its other links is"
        },
        "boundaryMinNodes": {
          "type": "integer",
          "minimum": 1,
          "maximum": 1000,
          "description": "boundary: distinct slow nodes on each side"
        },
        "boundaryMinJobs": {
          "type": "integer",
          "minimum": 1,
          "maximum": 1000,
          "description": "boundary: distinct jobs slow across it"
        },
        "insideHealthyFraction": {
          "type": "number",
          "minimum": 0,
          "maximum": 1,
          "description": "boundary: fraction of the links inside its localities that must be healthy"
        },
        "uplinkMinBoundaries": {
          "type": "integer",
          "minimum": 2,
          "maximum": 1000,
          "description": "a locality on this many suspect boundaries is named as its uplink"
        },
        "pairMinJobs": {
          "type": "integer",
          "minimum": 1,
          "maximum": 1000,
          "description": "node pair: distinct jobs slow on it"
        },
        "computeMinJobs": {
          "type": "integer",
          "minimum": 1,
          "maximum": 1000,
          "description": "compute: distinct jobs that saw the node's GPU slow"
        }
      }
    }
  }
} as const;
