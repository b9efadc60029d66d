"""The client checks its messages against the repository's schemas/*.json (the daemon's own).
Run from clients/python: /usr/bin/python3 -m unittest discover -s tests -t ."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from pipemorph import schemas  # noqa: E402
from pipemorph.protocol import PipemorphRank  # noqa: E402


class FakeRedis:
    def __init__(self):
        self.added = []

    def xadd(self, key, fields, **_):
        self.added.append((key, fields))
        return b"1-1"


REGISTRATION = {
    "jobId": "j", "stages": 2, "microbatches": 4, "dp": 1, "tp": 1,
    "ranks": [{"rank": r, "dp": 0, "pp": r, "tp": 0, "node": "n%d" % r} for r in range(2)],
    "memory": {"deviceBytes": [1e9, 1e9], "activationBytes": [1e8, 1e8], "hostBytes": 0},
}


class SchemaTest(unittest.TestCase):
    def test_reads_the_repository_schemas(self):
        self.assertEqual(schemas.schema_dir(), os.path.normpath(os.path.join(HERE, "..", "..", "..", "schemas")))
        self.assertEqual(schemas.load("ack.v1")["properties"]["type"], {"const": "ack"})

    def test_accepts_what_the_schema_allows_and_names_every_problem_otherwise(self):
        self.assertEqual(schemas.problems(dict(REGISTRATION, type="register", protocol=1), schemas.load("registration.v1")), [])
        broken = dict(REGISTRATION, type="register", protocol=1, stages=0, extra=True)
        del broken["memory"]
        found = schemas.problems(broken, schemas.load("registration.v1"))
        self.assertEqual(sorted(found), ["/extra is not allowed", "/memory is required", "/stages must be minimum 1"])

    def test_writes_no_message_that_breaks_its_schema(self):
        redis = FakeRedis()
        PipemorphRank.register(redis, REGISTRATION)
        with self.assertRaisesRegex(ValueError, "/ranks/0/node"):
            PipemorphRank.register(redis, dict(REGISTRATION, ranks=[{"rank": 0, "dp": 0, "pp": 0, "tp": 0, "node": ""}]))
        rank = PipemorphRank(redis, "j", 0, 0, 0)
        rank.report(3, 1, 1.0, 2.0, 1.0, [PipemorphRank.link(1, "pipeline", 1 << 20, 0.5, 0.7)])
        with self.assertRaisesRegex(ValueError, "/links/0/kind must be one of"):
            rank.report(4, 1, 1.0, 2.0, 1.0, [PipemorphRank.link(1, "ring", 1 << 20, 0.5, 0.7)])
        self.assertEqual(len(redis.added), 2)  # the two valid messages only


if __name__ == "__main__":
    unittest.main()
