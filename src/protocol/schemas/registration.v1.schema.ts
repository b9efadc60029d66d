// Generated from schemas/registration.v1.schema.json by test/schema-types.test.ts; do not edit (PIPEMORPH_WRITE_SCHEMAS=1 regenerates it).
export const registrationV1Schema = {
  "$schema": "http://json-schema.org/draft-07/schema#",
  "$id": "https://pipemorph.dev/schemas/registration.v1.schema.json",
  "title": "Job registration (protocol v1)",
  "description": "Written once per job (by the launcher or rank 0) as field `m` of an entry on the stream `pipemorph:registrations`. Registering again with the same jobId replaces the job's topology (e.g. after an elastic restart).",
  "type": "object",
  "additionalProperties": false,
  "required": [
    "type",
    "protocol",
    "jobId",
    "stages",
    "microbatches",
    "dp",
    "tp",
    "ranks",
    "memory"
  ],
  "properties": {
    "type": {
      "const": "register"
    },
    "protocol": {
      "const": 1
    },
    "jobId": {
      "$ref": "#/definitions/jobId"
    },
    "stages": {
      "type": "integer",
      "minimum": 1,
      "maximum": 256
    },
    "microbatches": {
      "type": "integer",
      "minimum": 1,
      "maximum": 16384
    },
    "dp": {
      "type": "integer",
      "minimum": 1,
      "maximum": 4096,
      "description": "Data-parallel size (pipeline replicas)."
    },
    "tp": {
      "type": "integer",
      "minimum": 1,
      "maximum": 64,
      "description": "Tensor-parallel size (inside a node)."
    },
    "ranks": {
      "type": "array",
      "minItems": 1,
      "maxItems": 65536,
      "description": "Every rank exactly once: stages x dp x tp entries.",
      "items": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "rank",
          "dp",
          "pp",
          "tp",
          "node"
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
          },
          "tp": {
            "type": "integer",
            "minimum": 0
          },
          "node": {
            "type": "string",
            "minLength": 1,
            "maxLength": 253
          },
          "locality": {
            "type": "string",
            "minLength": 1,
            "maxLength": 253,
            "description": "Failure or network domain of the node (rack, leaf switch, datacenter). A slow link measured between two localities is taken to slow every node pair across them."
          }
        }
      }
    },
    "memory": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "deviceBytes",
        "activationBytes",
        "hostBytes"
      ],
      "properties": {
        "deviceBytes": {
          "$ref": "#/definitions/perStageBytes",
          "description": "Device memory available for activations, per stage."
        },
        "activationBytes": {
          "$ref": "#/definitions/perStageBytes",
          "description": "Activation memory one microbatch holds between its F and its B, per stage."
        },
        "hostBytes": {
          "type": "number",
          "minimum": 0,
          "description": "Host memory per rank available to CPU delegation for offloaded activations."
        }
      }
    },
    "computeMs": {
      "type": "object",
      "description": "Optional first estimate of per-stage op times, used until reports arrive.",
      "additionalProperties": false,
      "required": [
        "fMs",
        "bMs",
        "wMs"
      ],
      "properties": {
        "fMs": {
          "$ref": "#/definitions/perStageMs"
        },
        "bMs": {
          "$ref": "#/definitions/perStageMs"
        },
        "wMs": {
          "$ref": "#/definitions/perStageMs"
        }
      }
    },
    "network": {
      "type": "object",
      "additionalProperties": false,
      "description": "Optional nominal network, used as the healthy baseline of a link before one is learned.",
      "properties": {
        "nominalGBps": {
          "type": "number",
          "exclusiveMinimum": 0
        },
        "latencyMs": {
          "type": "number",
          "minimum": 0
        }
      }
    },
    "layers": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "fMs",
        "bMs",
        "wMs",
        "stateBytes",
        "activationBytes",
        "perStage"
      ],
      "description": "Optional: the model's layers as the ranks measured them, so the daemon can price any contiguous split of layers into stages and move layers away from a slow rank (docs/rebalancing.md). Every per-layer array has one entry per layer, in model order. Without it the daemon never re-balances.",
      "properties": {
        "fMs": {
          "$ref": "#/definitions/perLayerMs",
          "description": "Forward time of one microbatch through the layer on a healthy device, ms."
        },
        "bMs": {
          "$ref": "#/definitions/perLayerMs",
          "description": "Backward-for-inputs time per layer, ms."
        },
        "wMs": {
          "$ref": "#/definitions/perLayerMs",
          "description": "Backward-for-weights time per layer, ms."
        },
        "stateBytes": {
          "$ref": "#/definitions/perLayerBytes",
          "description": "Weights, gradients and optimizer state of the layer: what sits on the device for it and what moves with it."
        },
        "activationBytes": {
          "$ref": "#/definitions/perLayerBytes",
          "description": "Activation memory one microbatch holds for the layer between its F and its B."
        },
        "perStage": {
          "type": "array",
          "minItems": 1,
          "maxItems": 256,
          "items": {
            "type": "integer",
            "minimum": 1,
            "maximum": 65536
          },
          "description": "Layers each stage holds now, in stage order (stage 0 the first perStage[0] layers, and so on): one entry per stage, summing to the number of layers."
        }
      }
    },
    "dataParallel": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "gradientBytes"
      ],
      "description": "Optional: the data-parallel all-reduce, so that slow data-parallel links can be priced and ranks re-mapped away from them. Without it the daemon detects data-parallel stragglers but never re-maps.",
      "properties": {
        "gradientBytes": {
          "$ref": "#/definitions/perStageBytes",
          "description": "Per stage: gradient bytes each rank all-reduces per iteration."
        },
        "chunkBytes": {
          "type": "number",
          "exclusiveMinimum": 0,
          "description": "Bytes per ring message (default 4194304)."
        },
        "inflightChunks": {
          "type": "integer",
          "minimum": 1,
          "maximum": 1024,
          "description": "Ring messages in flight per link (default 8)."
        },
        "gbps": {
          "type": "number",
          "exclusiveMinimum": 0,
          "description": "Healthy ring link bandwidth, GB/s (default network.nominalGBps, else 25)."
        },
        "latencyMs": {
          "type": "number",
          "minimum": 0,
          "description": "Healthy one-way latency of a ring link, ms (default network.latencyMs, else 0)."
        }
      }
    }
  },
  "definitions": {
    "jobId": {
      "type": "string",
      "pattern": "^[A-Za-z0-9._-]{1,64}$"
    },
    "perStageBytes": {
      "type": "array",
      "minItems": 1,
      "items": {
        "type": "number",
        "minimum": 0
      }
    },
    "perStageMs": {
      "type": "array",
      "minItems": 1,
      "items": {
        "type": "number",
        "minimum": 0
      }
    },
    "perLayerMs": {
      "type": "array",
      "minItems": 1,
      "maxItems": 65536,
      "items": {
        "type": "number",
        "minimum": 0,
        "maximum": 3600000
      }
    },
    "perLayerBytes": {
      "type": "array",
      "minItems": 1,
      "maxItems": 65536,
      "items": {
        "type": "number",
        "minimum": 0
      }
    }
  }
} as const;
